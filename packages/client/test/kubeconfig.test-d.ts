/** createClient and createTransport take kubeloop's RestConfig or a @kubernetes/client-node KubeConfig. */
import type { KubeConfig } from '@kubernetes/client-node';
import { describe, expectTypeOf, it } from 'vitest';
import type { ClientOptions, KubeConfigLike, RestConfig, Transport, TransportOptions } from '../src/index.js';
import { createTransport, loadKubeConfig } from '../src/index.js';

describe('config types', () => {
  it('both configs are accepted', () => {
    expectTypeOf(loadKubeConfig()).toEqualTypeOf<RestConfig>();
    expectTypeOf<RestConfig>().toExtend<KubeConfigLike>();
    expectTypeOf<KubeConfig>().toExtend<KubeConfigLike>();
    expectTypeOf<{ kubeConfig: KubeConfig }>().toExtend<ClientOptions>();
    expectTypeOf<{ kubeConfig: RestConfig }>().toExtend<ClientOptions>();
    expectTypeOf(createTransport).parameter(0).toEqualTypeOf<KubeConfigLike>();
  });

  it('a hand-written config needs only a server', () => {
    expectTypeOf({ server: 'http://127.0.0.1:8001' }).toExtend<RestConfig>();
    expectTypeOf<{ tls: object }>().not.toExtend<RestConfig>();
  });

  it('fork takes the same options and gives a transport', () => {
    expectTypeOf<Transport['fork']>().parameter(0).toEqualTypeOf<TransportOptions | undefined>();
    expectTypeOf<ReturnType<Transport['fork']>>().toEqualTypeOf<Transport>();
    expectTypeOf<Transport['options']['qps']>().toEqualTypeOf<number>();
  });
});
