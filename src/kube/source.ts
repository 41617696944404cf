/**
 * Whether an API server is configured, decided without loading anything of the client (client.ts
 * and its transport load node:https): commands without one never load them.
 */
import { existsSync } from 'node:fs';

export const IN_CLUSTER_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/** Where the API server comes from: a kubeconfig file or the in-cluster service account. */
export type KubeSource = { kind: 'kubeconfig'; path: string } | { kind: 'in-cluster' };

/** Where the API server comes from, or undefined when none is configured. */
export function detectKube(kubeconfig: string | undefined, env: NodeJS.ProcessEnv = process.env, tokenExists: (path: string) => boolean = existsSync): KubeSource | undefined {
  const path = kubeconfig ?? env.KUBECONFIG;
  if (path) return { kind: 'kubeconfig', path: path.split(':')[0] ?? path };
  if (env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT && tokenExists(IN_CLUSTER_TOKEN)) return { kind: 'in-cluster' };
  return undefined;
}
