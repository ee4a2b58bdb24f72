/** Shared helpers for the webhook tests: certificates for 127.0.0.1, a server on a free port, HTTPS calls to it. */
import { request } from 'node:https';
import type { Agent } from 'node:https';
import { createCertificateAuthority } from '@kubeloop/pki';
import type { CertificateAuthority, KeyPairPem } from '@kubeloop/pki';
import { createWebhookServer, staticCertificate } from '../src/index.js';
import type { CertificateSource, WebhookServer, WebhookServerOptions } from '../src/index.js';

export interface TestPki {
  readonly ca: CertificateAuthority;
  readonly serving: KeyPairPem;
}

export function testPki(commonName = 'webhook-test'): TestPki {
  const ca = createCertificateAuthority({ commonName: `${commonName}-ca` });
  return { ca, serving: ca.issue({ commonName, usage: 'server', hosts: ['127.0.0.1', 'localhost'] }) };
}

export interface RunningServer {
  readonly server: WebhookServer;
  readonly url: string;
  readonly port: number;
  readonly stop: () => Promise<void>;
  readonly done: Promise<void>;
}

/** Start a webhook server on 127.0.0.1 and a free port. */
export async function runServer(options: Partial<WebhookServerOptions> & { certificates?: CertificateSource; pki?: TestPki } = {}): Promise<RunningServer> {
  const pki = options.pki ?? testPki();
  const server = createWebhookServer({ host: '127.0.0.1', port: 0, certificates: staticCertificate({ certPem: pki.serving.certPem, keyPem: pki.serving.keyPem }), ...options });
  const ac = new AbortController();
  const done = server.start(ac.signal);
  done.catch(() => undefined);
  const address = await server.listening();
  return {
    server,
    url: address.url,
    port: address.port,
    done,
    stop: async () => {
      ac.abort();
      await done;
    },
  };
}

export interface HttpResult {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
  readonly json: unknown;
}

/** POST (or another method) to the server; `body` is sent as is when a string or Buffer, else as JSON. */
export function call(
  url: string,
  path: string,
  body: unknown,
  options: { ca: string; method?: string; headers?: Record<string, string>; timeoutMs?: number; agent?: Agent } = { ca: '' },
): Promise<HttpResult> {
  const payload = typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(path, url),
      {
        method: options.method ?? 'POST',
        ca: options.ca,
        headers: {
          'content-type': 'application/json',
          ...(payload !== undefined && (options.method ?? 'POST') !== 'GET' ? { 'content-length': String(Buffer.byteLength(payload)) } : {}),
          ...options.headers,
        },
        timeout: options.timeoutMs ?? 20_000,
        ...(options.agent ? { agent: options.agent } : { agent: false }),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('test request timed out')));
    req.on('error', reject);
    if (payload !== undefined && (options.method ?? 'POST') !== 'GET') req.write(payload);
    req.end();
  });
}

/** An AdmissionReview for a request. */
export function admissionReview(request: Record<string, unknown>): Record<string, unknown> {
  return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request };
}
