/**
 * podctl's window on the API server: list this node's pods, post Events, and mark evicted pods'
 * status — through @kubernetes/client-node, which is loaded only when an API server is configured.
 *
 * Invariants:
 * - Importing this module costs nothing: @kubernetes/client-node (~390 ms) is imported inside
 *   `connectKube`, and only `detectKube` decides whether that happens.
 * - An API server is configured by --kubeconfig, $KUBECONFIG, or the in-cluster service account;
 *   without one podctl works from the runtime alone and never calls `connectKube`.
 * - Every request has a deadline (default 10 s); a failure becomes a `KubeError` naming the call and
 *   the kubeconfig to check.
 */
import { existsSync } from 'node:fs';
import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';

export const IN_CLUSTER_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

export type KubeSource = { kind: 'kubeconfig'; path: string } | { kind: 'in-cluster' };

/** Where the API server comes from, or undefined when none is configured. */
export function detectKube(
  kubeconfig: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
  tokenExists: (path: string) => boolean = existsSync,
): KubeSource | undefined {
  const path = kubeconfig ?? env.KUBECONFIG;
  if (path) return { kind: 'kubeconfig', path: path.split(':')[0] ?? path };
  if (env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT && tokenExists(IN_CLUSTER_TOKEN)) return { kind: 'in-cluster' };
  return undefined;
}

export class KubeError extends Error {
  override readonly name = 'KubeError';
  readonly call: string;
  readonly statusCode: number | undefined;
  constructor(call: string, message: string, statusCode?: number, options?: { cause?: unknown }) {
    super(message, options);
    this.call = call;
    this.statusCode = statusCode;
  }
}

export interface EvictionStatus {
  reason: string;
  message: string;
}

/** The API-server operations podctl needs, nothing more. */
export interface KubeClient {
  readonly node: string;
  /** Pods bound to this node (fieldSelector spec.nodeName=<node>), every namespace. */
  listNodePods(signal?: AbortSignal): Promise<V1Pod[]>;
  /** A pod-scoped Event from component "podctl" on this node. */
  postEvent(pod: V1Pod, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void>;
  /** Status phase Failed with the eviction reason and message, as the kubelet's eviction manager sets it. */
  markEvicted(pod: V1Pod, status: EvictionStatus): Promise<void>;
}

export interface ConnectOptions {
  node: string;
  /** Deadline per request, ms (default 10_000). */
  timeoutMs?: number;
}

function describeSource(source: KubeSource): string {
  return source.kind === 'kubeconfig' ? `kubeconfig ${source.path}` : 'the in-cluster service account';
}

/** Builds the client; this is where @kubernetes/client-node is imported. */
export async function connectKube(source: KubeSource, options: ConnectOptions): Promise<KubeClient> {
  const k8s = await import('@kubernetes/client-node');
  const config = new k8s.KubeConfig();
  try {
    if (source.kind === 'kubeconfig') config.loadFromFile(source.path);
    else config.loadFromCluster();
  } catch (error) {
    throw new KubeError('load', `cannot load ${describeSource(source)}: ${(error as Error).message} (check --kubeconfig)`, undefined, { cause: error });
  }
  if (!config.getCurrentCluster()) {
    throw new KubeError('load', `${describeSource(source)} has no current cluster (check --kubeconfig or its current-context)`);
  }
  const core = config.makeApiClient(k8s.CoreV1Api);
  const timeoutMs = options.timeoutMs ?? 10_000;
  const where = describeSource(source);

  const call = async <T>(name: string, run: () => Promise<T>, signal?: AbortSignal): Promise<T> => {
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    try {
      return await Promise.race([
        run(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new KubeError(name, `${name}: no answer from the API server within ${timeoutMs} ms (${where})`)), timeoutMs);
          if (signal) {
            onAbort = () => reject(signal.reason ?? new DOMException('aborted', 'AbortError'));
            if (signal.aborted) onAbort();
            else signal.addEventListener('abort', onAbort, { once: true });
          }
        }),
      ]);
    } catch (error) {
      if (error instanceof KubeError || (error as Error)?.name === 'AbortError') throw error;
      const code = (error as { code?: number }).code;
      const detail = (error as Error)?.message?.split('\n')[0] ?? String(error);
      throw new KubeError(name, `${name} failed${code ? ` (HTTP ${code})` : ''}: ${detail} (${where})`, code, { cause: error });
    } finally {
      if (timer) clearTimeout(timer);
      if (onAbort && signal) signal.removeEventListener('abort', onAbort);
    }
  };

  return {
    node: options.node,
    async listNodePods(signal) {
      const list = await call('list pods', () => core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${options.node}` }), signal);
      return list.items;
    },
    async postEvent(pod, type, reason, message) {
      const namespace = pod.metadata?.namespace ?? 'default';
      const now = new Date();
      const event: CoreV1Event = {
        metadata: { generateName: `${pod.metadata?.name ?? 'pod'}.`, namespace },
        involvedObject: {
          apiVersion: 'v1',
          kind: 'Pod',
          name: pod.metadata?.name,
          namespace,
          uid: pod.metadata?.uid,
        },
        type,
        reason,
        message,
        source: { component: 'podctl', host: options.node },
        reportingComponent: 'podctl',
        reportingInstance: options.node,
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
      };
      await call('post event', () => core.createNamespacedEvent({ namespace, body: event }));
    },
    async markEvicted(pod, status) {
      const body = { status: { phase: 'Failed', reason: status.reason || 'Evicted', message: status.message } };
      await call(
        'patch pod status',
        () =>
          core.patchNamespacedPodStatus(
            { name: pod.metadata?.name ?? '', namespace: pod.metadata?.namespace ?? 'default', body },
            k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
          ),
      );
    },
  };
}
