/** The admin kubeconfig envtest writes. */

export interface KubeconfigInput {
  readonly server: string;
  readonly caPem: string;
  readonly clientCertPem: string;
  readonly clientKeyPem: string;
  readonly name?: string;
}

const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');

/** A kubeconfig YAML with everything embedded (no file references). */
export function renderKubeconfig(input: KubeconfigInput): string {
  const name = input.name ?? 'envtest';
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: ${name}`,
    '  cluster:',
    `    server: ${input.server}`,
    `    certificate-authority-data: ${b64(input.caPem)}`,
    'users:',
    `- name: ${name}-admin`,
    '  user:',
    `    client-certificate-data: ${b64(input.clientCertPem)}`,
    `    client-key-data: ${b64(input.clientKeyPem)}`,
    'contexts:',
    `- name: ${name}`,
    '  context:',
    `    cluster: ${name}`,
    `    user: ${name}-admin`,
    '    namespace: default',
    `current-context: ${name}`,
    '',
  ].join('\n');
}
