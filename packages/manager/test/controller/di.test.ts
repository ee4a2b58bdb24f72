/**
 * Controllers registered through dependency injection (tsyringe): the
 * `@controller(...)` decorator with an explicit `inject` list (no decorator
 * metadata needed), explicit registrations, user services registered in the
 * manager's container, and the errors of each.
 */
// tsyringe needs the Reflect metadata polyfill before it loads (the manager's index imports it too, but later).
import 'reflect-metadata';
import { container as rootContainer, inject, injectable } from 'tsyringe';
import type { DependencyContainer } from 'tsyringe';
import type { Logger } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@kubeloop/client';
import { mergePatch } from '@kubeloop/client';
import { ConfigMap } from '@kubeloop/scheme';
import type { Scheme } from '@kubeloop/scheme';
import type { InformerCache } from '@kubeloop/cache';
import { controller, isManagerError, Result, TOKENS } from '../../src/index.js';
import type { EventRecorderProvider, Manager, ReconcileContext, Reconciler, Request } from '../../src/index.js';
import type { ReconcilerClass } from '../../src/internal-api.js';
import { eventually, newNamespace, run, synced, testClient, testManager } from '../support.js';
import type { Running } from '../support.js';

let client: Client;
let ns: string;
const running: Running[] = [];

beforeAll(async () => {
  client = testClient();
  ns = await newNamespace(client, 'di');
});
afterEach(async () => {
  for (const r of running.splice(0)) await r.stop();
});
afterAll(() => {
  client.transport.close();
});

function reasonOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return isManagerError(err) ? err.reason : `not a ManagerError: ${String(err)}`;
  }
  return undefined;
}

/** A user service registered by value under a token. */
interface Settings {
  readonly stamp: string;
}
const SETTINGS = Symbol('test.Settings');

/** A user service registered as a class. */
class Greeter {
  greet(name: string): string {
    return `hello ${name}`;
  }
}

/** What a constructed reconciler was given, to compare with the manager's own objects. */
const constructed: unknown[][] = [];

@controller({
  name: 'greeting',
  for: ConfigMap,
  inject: [TOKENS.Client, TOKENS.ApiReader, TOKENS.Logger, TOKENS.EventRecorderProvider, TOKENS.Scheme, TOKENS.Cache, TOKENS.Manager, SETTINGS, Greeter],
})
class GreetingReconciler implements Reconciler {
  constructor(
    private readonly client: Client,
    apiReader: Client,
    logger: Logger,
    recorders: EventRecorderProvider,
    scheme: Scheme,
    cache: InformerCache,
    manager: Manager,
    private readonly settings: Settings,
    private readonly greeter: Greeter,
  ) {
    constructed.push([client, apiReader, logger, recorders, scheme, cache, manager, settings, greeter]);
  }

  async reconcile(req: Request, _ctx: ReconcileContext) {
    const cm = await this.client.get(ConfigMap, { namespace: req.namespace!, name: req.name }).catch(() => undefined);
    if (!cm || cm.metadata?.labels?.['di-test'] !== 'yes' || cm.data?.['greeting']) return Result.done();
    await this.client.patch(ConfigMap, { namespace: req.namespace!, name: req.name }, mergePatch({ data: { greeting: this.greeter.greet(req.name), stamp: this.settings.stamp } }));
    return Result.done();
  }
}

class Undecorated implements Reconciler {
  reconcile() {
    return Result.done();
  }
}

describe('register', () => {
  it('refuses a class with no @controller decoration and no registration', () => {
    const m = testManager(ns);
    expect(reasonOf(() => m.register(Undecorated))).toBe('InvalidRegistration');
    expect(m.controllers()).toEqual([]);
  });

  it('resolves a decorated class with explicit inject tokens: the manager services and user services from manager.container', async () => {
    const m = testManager(ns);
    const settings: Settings = { stamp: 'from-the-container' };
    m.container.registerInstance(SETTINGS, settings);
    m.container.register(Greeter, { useClass: Greeter });
    constructed.length = 0;
    m.register(GreetingReconciler);
    expect(m.controllers().map((c) => c.name)).toEqual(['greeting']);
    expect(constructed).toHaveLength(1);
    const [c, apiReader, logger, recorders, scheme, cache, manager, s, greeter] = constructed[0]!;
    expect(c).toBe(m.client);
    expect(apiReader).toBe(m.apiReader);
    expect(logger).toBe(m.logger);
    expect(typeof (recorders as EventRecorderProvider).recorderFor).toBe('function');
    expect(scheme).toBe(m.scheme);
    expect(cache).toBe(m.cache);
    expect(manager).toBe(m);
    expect(s).toBe(settings);
    expect(greeter).toBeInstanceOf(Greeter);

    // and the reconciler it built runs with those dependencies
    start(m);
    await synced(m);
    await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'greet-me', namespace: ns, labels: { 'di-test': 'yes' } } });
    const done = await eventually(() => client.get(ConfigMap, { namespace: ns, name: 'greet-me' }), (cm) => cm.data?.['greeting'] !== undefined, 'the reconciler to write');
    expect(done.data).toEqual({ greeting: 'hello greet-me', stamp: 'from-the-container' });
  });

  it('reports a dependency the container cannot resolve as a Resolution error, naming the class', () => {
    const m = testManager(ns);
    // SETTINGS is not registered in this manager's container
    let caught: unknown;
    try {
      m.register(GreetingReconciler);
    } catch (err) {
      caught = err;
    }
    expect(isManagerError(caught) && caught.reason).toBe('Resolution');
    expect(String((caught as Error).message)).toContain('GreetingReconciler');
    expect(m.controllers()).toEqual([]);
  });

  it('takes an explicit registration for an undecorated class', async () => {
    const m = testManager(ns);
    const seen: string[] = [];
    class Plain implements Reconciler {
      constructor(private readonly settings: Settings) {}
      reconcile(req: Request) {
        if (req.name === 'plain-target') seen.push(`${this.settings.stamp}:${req.name}`);
      }
    }
    m.container.register(SETTINGS, { useValue: { stamp: 'plain' } });
    m.register(Plain, { for: ConfigMap, name: 'plain', inject: [SETTINGS] });
    start(m);
    await synced(m);
    await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'plain-target', namespace: ns } });
    await eventually(() => seen, (s) => s.length > 0, 'the plain reconciler');
    expect(seen[0]).toBe('plain:plain-target');
  });

  it('without an inject list, tsyringe resolves the class: @injectable() with @inject(token) parameters', () => {
    @injectable()
    class WithTokens implements Reconciler {
      constructor(
        @inject(TOKENS.Client) readonly client: Client,
        @inject(SETTINGS) readonly settings: Settings,
        readonly greeter: Greeter,
      ) {}
      reconcile() {
        return Result.done();
      }
    }
    const m = testManager(ns);
    m.container.registerInstance(SETTINGS, { stamp: 'tokens' });
    const made: WithTokens[] = [];
    m.container.afterResolution(WithTokens, (_t, r) => void made.push(r as WithTokens), { frequency: 'Always' });
    m.register(WithTokens, { for: ConfigMap, name: 'with-tokens' });
    expect(made).toHaveLength(1);
    expect(made[0]?.client).toBe(m.client);
    expect(made[0]?.settings.stamp).toBe('tokens');
    // the third parameter has no token: its type, from the emitted decorator metadata
    expect(made[0]?.greeter).toBeInstanceOf(Greeter);
  });

  it('without an inject list, a factory the user registered for the class is used', () => {
    class WithFactory implements Reconciler {
      constructor(
        readonly client: Client,
        readonly settings: Settings,
      ) {}
      reconcile() {
        return Result.done();
      }
    }
    const m = testManager(ns);
    m.container.registerInstance(SETTINGS, { stamp: 'factory' });
    const made: WithFactory[] = [];
    m.container.register(WithFactory, {
      useFactory: (c) => {
        const r = new WithFactory(c.resolve<Client>(TOKENS.Client), c.resolve<Settings>(SETTINGS));
        made.push(r);
        return r;
      },
    });
    m.register(WithFactory, { for: ConfigMap, name: 'with-factory' });
    expect(made).toHaveLength(1);
    expect(made[0]?.client).toBe(m.client);
    expect(made[0]?.settings.stamp).toBe('factory');
    expect(m.controllers().map((c) => c.name)).toEqual(['with-factory']);
  });

  it('refuses a class without a reconcile method', () => {
    const m = testManager(ns);
    class NoReconcile {}
    expect(reasonOf(() => m.register(NoReconcile as unknown as ReconcilerClass, { for: ConfigMap }))).toBe('InvalidRegistration');
  });

  it('a decorated class registered twice clashes on its name', () => {
    const m = testManager(ns);
    m.container.registerInstance(SETTINGS, { stamp: 'x' });
    m.container.register(Greeter, { useClass: Greeter });
    m.register(GreetingReconciler);
    expect(reasonOf(() => m.register(GreetingReconciler))).toBe('InvalidRegistration');
  });
});

describe('containers', () => {
  it('each manager has a child container: registrations do not leak between managers or into the parent', () => {
    const a = testManager(ns);
    const b = testManager(ns);
    a.container.registerInstance(SETTINGS, { stamp: 'a' });
    expect(a.container.isRegistered(SETTINGS, true)).toBe(true);
    expect(b.container.isRegistered(SETTINGS, true)).toBe(false);
    expect(rootContainer.isRegistered(SETTINGS, true)).toBe(false);
    expect(a.container.resolve(TOKENS.Manager)).toBe(a);
    expect(b.container.resolve(TOKENS.Manager)).toBe(b);
  });

  it('resolves services registered in a parent container given as an option', () => {
    const parent: DependencyContainer = rootContainer.createChildContainer();
    parent.registerInstance(SETTINGS, { stamp: 'parent' });
    parent.register(Greeter, { useClass: Greeter });
    const m = testManager(ns, { container: parent });
    constructed.length = 0;
    m.register(GreetingReconciler);
    expect((constructed[0]?.[7] as Settings).stamp).toBe('parent');
    expect(parent.isRegistered(TOKENS.Manager)).toBe(false);
  });
});

function start(manager: Manager): Running {
  const r = run(manager);
  running.push(r);
  return r;
}
