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
 * - Importing this module costs no client-node: @kubernetes/client-node (~390 ms) is imported inside
 *   `connectKube`, and only `detectKube` decides whether that happens. `detectKube` lives in
 *   source.ts, which loads nothing else (a command without an API server never loads client.ts,
 *   whose transport loads node:https and node:tls).
 * - An API server is configured by --kubeconfig, $KUBECONFIG, or the in-cluster service account;
 *   without one podctl works from the runtime alone and never calls `connectKube`.
 * - Every request has a deadline (default 10 s) and a bounded retry budget; a failure becomes a
 *   `KubeError` naming the call and the kubeconfig to check.
 */
export { detectKube, IN_CLUSTER_TOKEN } from './source.js';

export { KubeError } from './errors.js';
export { connectKube, type KubeClient } from './client.js';
