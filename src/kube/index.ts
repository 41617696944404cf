/**
 * podctl's window on the API server, spoken to as the kubelet speaks to it: this node's pods
 * (listed and watched), the final delete of pods deleted in the API, pod status and Events, the
 * Node and its Lease — through @kubernetes/client-node, loaded only when an API server is configured.
 *
 * Modules: errors (KubeError, RBAC lines), retry (deadline, Retry-After, jittered backoff),
 * transport (HTTP and watch streams), client (the calls), status (the kubelet's wording),
 * desired (the kubelet's config source: mirror pods, deletions), pod-source (list + watch),
 * kubelet (is a kubelet running beside podctl?), pending (API actions owed, kept in the state dir).
 *
 * Invariants:
 * - Importing this module costs nothing: @kubernetes/client-node (~390 ms) is imported inside
 *   `connectKube`, and only `detectKube` decides whether that happens.
 * - An API server is configured by --kubeconfig, $KUBECONFIG, or the in-cluster service account;
 *   without one podctl works from the runtime alone and never calls `connectKube`.
 * - Every request has a deadline (default 10 s) and a bounded retry budget; a failure becomes a
 *   `KubeError` naming the call and the kubeconfig to check.
 */
import { existsSync } from 'node:fs';

export const IN_CLUSTER_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

import type { KubeSource } from './source.js';
export type { KubeSource } from './source.js';

/** Where the API server comes from, or undefined when none is configured. */
export function detectKube(kubeconfig: string | undefined, env: NodeJS.ProcessEnv = process.env, tokenExists: (path: string) => boolean = existsSync): KubeSource | undefined {
  const path = kubeconfig ?? env.KUBECONFIG;
  if (path) return { kind: 'kubeconfig', path: path.split(':')[0] ?? path };
  if (env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT && tokenExists(IN_CLUSTER_TOKEN)) return { kind: 'in-cluster' };
  return undefined;
}

export { KubeError } from './errors.js';
export { connectKube, type KubeClient } from './client.js';
