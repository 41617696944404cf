/**
 * The API-server client: the calls podctl makes, each with its RBAC need, deadline and retries.
 * @kubernetes/client-node is imported here, inside `connectKube`, and nowhere on a start-up path.
 *
 * Invariants:
 * - Every call has a deadline per attempt (`timeoutMs`) and a retry budget (retry.ts): 429 waits
 *   the server's Retry-After, 5xx and connection errors back off with jitter, and nothing waits
 *   past the budget. 401/403 become one line naming the missing RBAC verb and resource.
 * - A server that does not answer is named with the wait it was given: the caller's bound (a
 *   `boundSignal`, lib/abortable.ts) as that bound, and retried deadlines as how many attempts of
 *   how long (silenceOf): never a bare "aborted due to timeout", never one deadline for the sum.
 * - Status patches use strategic-merge-patch with the pod's uid and resourceVersion as
 *   preconditions; a 409 re-reads the pod and retries (bounded); a pod replaced under the same name
 *   (another uid) is left alone.
 * - The final delete is DELETE with gracePeriodSeconds 0 and preconditions.uid; 404 and 409 are
 *   answered as 'gone' and 'uid-changed', which callers treat as success-and-forget.
 * - Every call is one that deploy/clusterrole.yaml grants (the test suite runs the agent's calls
 *   under exactly that RBAC): Events are only created, a pod Event's name is its pod's UID and
 *   reason, so a report made twice (a retry, another podctl process) is one Event.
 * - Watches ask for bookmarks and a server-side timeout drawn in [5, 10) min (client-go's
 *   reflector), so a thousand nodes do not renew theirs in the same second; a watch silent past
 *   `watchIdleMs` is cut (transport.ts) and its follower resumes it.
 */
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { KubeError, authMessage, isConflict, isNotFound, type RbacNeed } from './errors.js';
import { leaseStore, type LeaseStore } from './leases.js';
import { BoundExceeded } from '../lib/abortable.js';
import { formatDuration } from '../lib/duration.js';
import { DEFAULT_RETRY_POLICY, withRetries, type RetryPolicy } from './retry.js';
import { eventName, evictedStatus, statusPatch, type PodStatusChange } from './status.js';
import { transportFor, type KubeRequest, type Transport, type WatchEvent } from './transport.js';
import type { KubeSource } from './source.js';
import { WriteGate, type AdmissionObject, type RestrictionReads } from './node-restriction.js';
import { NodeUid, nodeEventOver, podctlEvent } from './node-events.js';

interface PodList {
  pods: V1Pod[];
  resourceVersion: string;
}

/**
 * How a list may be served: `'0'` lets the API server answer from its watch cache (what an informer
 * starts from; its watch catches up), `''` (the default) is a quorum read from etcd.
 */
interface ListOptions {
  resourceVersion?: '0' | '';
}

/** Hears that a watch was answered (the server is reachable again). */
interface WatchHooks {
  onOpen?: () => void;
}

/** This node's Node object as podctl reads it. */
export interface NodeView {
  annotations: Record<string, string>;
  unschedulable: boolean;
  resourceVersion: string;
}

type FinalDeleteOutcome = 'deleted' | 'gone' | 'uid-changed';
type DeleteOutcome = 'accepted' | 'gone' | 'uid-changed';
/**
 * An eviction's answer. A 429 is a PodDisruptionBudget's refusal only when its Status names the
 * budget (a `DisruptionBudget` cause, as the API server's eviction REST writes it); any other 429
 * (API Priority and Fairness, a webhook) is `throttled`, to be retried after its Retry-After.
 */
type EvictOutcome =
  | { outcome: 'accepted' }
  | { outcome: 'gone' }
  | { outcome: 'blocked-by-pdb'; retryAfterMs: number | undefined; message: string; budget: string | undefined; disruptionsAllowed: number }
  | { outcome: 'throttled'; retryAfterMs: number | undefined; message: string };
type StatusPatchOutcome = 'patched' | 'gone' | 'uid-changed';

/** The API-server operations podctl needs, nothing more. */
export interface KubeClient extends RestrictionReads {
  readonly node: string;
  /** Every write (POST, PUT, PATCH, DELETE; a SelfSubjectReview aside) passes it: shut, none is sent. */
  readonly writes: WriteGate;
  /** Where the credentials come from, for messages. */
  readonly where: string;
  /** The API server's address, for messages. */
  readonly server: string;
  /** Pods bound to this node (fieldSelector spec.nodeName=<node>), every namespace. */
  listNodePods(signal?: AbortSignal): Promise<V1Pod[]>;
  /** The same, with the list's resourceVersion (to start a watch from). */
  listNodePodsVersioned(signal?: AbortSignal, options?: ListOptions): Promise<PodList>;
  /** Follows this node's pods from `resourceVersion` (bookmarks asked for); resolves when the server ends the stream. */
  watchNodePods(resourceVersion: string, onEvent: (event: WatchEvent) => void, signal?: AbortSignal, hooks?: WatchHooks): Promise<void>;
  /** This node's Node as a list of one (fieldSelector metadata.name), with the list's resourceVersion. */
  listNodeVersioned(signal?: AbortSignal, options?: ListOptions): Promise<{ nodes: V1Node[]; resourceVersion: string }>;
  /** Follows this node's Node from `resourceVersion` (fieldSelector metadata.name, bookmarks asked for). */
  watchNode(resourceVersion: string, onEvent: (event: WatchEvent) => void, signal?: AbortSignal, hooks?: WatchHooks): Promise<void>;
  getPod(namespace: string, name: string, signal?: AbortSignal): Promise<V1Pod | undefined>;
  /** A graceful delete with the grace and preconditions.uid (kubectl delete --grace-period). */
  deletePod(pod: { namespace: string; name: string; uid: string }, gracePeriodSeconds: number | undefined, signal?: AbortSignal): Promise<DeleteOutcome>;
  /** The kubelet's final delete: gracePeriodSeconds 0 and preconditions.uid. */
  finalDelete(pod: { namespace: string; name: string; uid: string }, signal?: AbortSignal): Promise<FinalDeleteOutcome>;
  /** pods/eviction (policy/v1 Eviction). */
  evictPod(pod: { namespace: string; name: string }, gracePeriodSeconds: number | undefined, signal?: AbortSignal): Promise<EvictOutcome>;
  /** A pod Event from component podctl, named by the pod's UID and reason: the same report twice is one Event (create only). */
  postEvent(pod: V1Pod, type: 'Normal' | 'Warning', reason: string, message: string, signal?: AbortSignal): Promise<void>;
  /** Phase, reason, message and the DisruptionTarget condition, by strategic-merge patch. */
  patchStatus(pod: { namespace: string; name: string; uid: string }, change: PodStatusChange, signal?: AbortSignal): Promise<StatusPatchOutcome>;
  /** Status phase Failed, reason Evicted, the message and DisruptionTarget, as the kubelet's eviction manager sets it. */
  markEvicted(pod: V1Pod, message: string): Promise<void>;
  /** spec.unschedulable (cordon / uncordon). */
  setUnschedulable(unschedulable: boolean, signal?: AbortSignal): Promise<void>;
  /** This node's annotations and whether it is cordoned; undefined when the Node does not exist. */
  getNode(signal?: AbortSignal): Promise<{ annotations: Record<string, string>; unschedulable: boolean } | undefined>;
  /** Sets (string) or removes (null) annotations of this node, by strategic-merge patch. */
  annotateNode(annotations: Record<string, string | null>, signal?: AbortSignal): Promise<void>;
  /** An Event on this Node from component podctl (maintenance progress). */
  postNodeEvent(type: 'Normal' | 'Warning', reason: string, message: string, signal?: AbortSignal): Promise<void>;
  /** The renewTime of this node's Lease in kube-node-lease; undefined when it has none. */
  nodeLeaseRenewedAt(signal?: AbortSignal): Promise<Date | undefined>;
  /** Leases in `namespace` (the drain lock): read, create, replace at a resourceVersion (leases.ts). */
  leases(namespace: string): LeaseStore;
}

export interface ConnectOptions {
  node: string;
  /** Deadline per request attempt, ms (default 10_000). */
  timeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  /** Hears each retry (for debug logs). */
  onRetry?: (call: string, error: KubeError, waitMs: number) => void;
  /**
   * Longest silence accepted on an open watch, ms (default 90_000: the API server's one-minute
   * bookmark interval plus a margin).
   */
  watchIdleMs?: number;
  /** Source of the watch timeouts' jitter (default Math.random). */
  random?: () => number;
  /** The write gate (default: open). */
  writes?: WriteGate;
}

/** The API server sends a bookmark about once a minute; a watch silent longer than this is cut. */
const DEFAULT_WATCH_IDLE_MS = 90_000;

function describeSource(source: KubeSource): string {
  return source.kind === 'kubeconfig' ? `kubeconfig ${source.path}` : 'the in-cluster service account';
}

const ref = (pod: V1Pod): { namespace: string; name: string; uid: string } => ({
  namespace: pod.metadata?.namespace ?? 'default',
  name: pod.metadata?.name ?? '',
  uid: pod.metadata?.uid ?? '',
});

/** The parts of a Node podctl reads. */
export function nodeView(n: { metadata?: { annotations?: Record<string, string>; resourceVersion?: string }; spec?: { unschedulable?: boolean } }): NodeView {
  return { annotations: n.metadata?.annotations ?? {}, unschedulable: n.spec?.unschedulable === true, resourceVersion: n.metadata?.resourceVersion ?? '' };
}

/**
 * A call's failure when the server did not answer, said with the wait it had: the caller's bound
 * (a BoundExceeded, or AbortSignal.timeout's TimeoutError), or `attempts` deadlines of
 * `deadlineMs` when more than one was tried. Any other error is returned as it is.
 */
function silenceOf(call: string, error: unknown, attempts: number, elapsedMs: number, transport: Pick<Transport, 'server' | 'where'>): unknown {
  const server = `the API server ${transport.server}`;
  if (error instanceof BoundExceeded || (error instanceof Error && error.name === 'TimeoutError')) {
    const bound = error instanceof BoundExceeded ? `within ${formatDuration(error.boundMs)}` : `within the command's bound (${formatDuration(elapsedMs)})`;
    return new KubeError(call, `${call}: no answer from ${server} ${bound} (${transport.where})`, undefined, { cause: error, transient: true });
  }
  if (error instanceof KubeError && error.deadlineMs !== undefined && attempts > 1) {
    const tries = `${attempts} attempts of ${formatDuration(error.deadlineMs)} each (${formatDuration(elapsedMs)} in all)`;
    return new KubeError(call, `${call}: no answer from ${server} in ${tries} (${transport.where})`, undefined, { cause: error, transient: true, deadlineMs: error.deadlineMs });
  }
  return error;
}

/** Builds the client; this is where @kubernetes/client-node is imported. */
export async function connectKube(source: KubeSource, options: ConnectOptions): Promise<KubeClient> {
  const k8s = await import('@kubernetes/client-node');
  const config = new k8s.KubeConfig();
  const where = describeSource(source);
  try {
    if (source.kind === 'kubeconfig') config.loadFromFile(source.path);
    else config.loadFromCluster();
  } catch (error) {
    throw new KubeError('load', `cannot load ${where}: ${(error as Error).message.split('\n')[0]} (check --kubeconfig)`, undefined, { cause: error, transient: false });
  }
  if (!config.getCurrentCluster()) {
    throw new KubeError('load', `${where} has no current cluster (check --kubeconfig or its current-context)`, undefined, { transient: false });
  }
  return clientOver(transportFor(config, where), options);
}

/** What the client's method groups share: the one call and watch (retries, RBAC lines, the write gate), the pod helpers. */
interface ClientCore {
  transport: Transport;
  node: string;
  where: string;
  timeoutMs: number;
  writes: WriteGate;
  call: (name: string, need: RbacNeed, request: KubeRequest, signal?: AbortSignal) => Promise<unknown>;
  watch: (name: string, need: RbacNeed, path: string, query: KubeRequest['query'], onEvent: (event: WatchEvent) => void, signal?: AbortSignal, hooks?: WatchHooks) => Promise<void>;
  getPod: KubeClient['getPod'];
  deleteWith: (pod: { namespace: string; name: string; uid: string }, grace: number | undefined, callName: string, signal?: AbortSignal) => Promise<'ok' | 'gone' | 'uid-changed'>;
  patchStatus: KubeClient['patchStatus'];
}

const podPath = (namespace: string, name: string): string => `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}`;
const admissionPath = '/apis/admissionregistration.k8s.io/v1';

/** The client over a transport (a seam for tests). */
function clientOver(transport: Transport, options: ConnectOptions): KubeClient {
  const core = coreOver(transport, options);
  return {
    node: core.node,
    where: core.where,
    server: transport.server,
    writes: core.writes,
    ...restrictionMethods(core),
    ...podReadMethods(core),
    ...podWriteMethods(core),
    ...nodeMethods(core),
  };
}

/** The one request path of every call: the write gate, retries with backoff, 401/403 as the RBAC line, silence said with its wait. */
function callOver(transport: Transport, options: ConnectOptions, writes: WriteGate): ClientCore['call'] {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const policy: RetryPolicy = { ...DEFAULT_RETRY_POLICY, ...options.retry };
  const where = transport.where;
  const isWrite = (request: KubeRequest): boolean => request.method !== 'GET' && !request.path.endsWith('/selfsubjectreviews');
  return async (name: string, need: RbacNeed, request: KubeRequest, signal?: AbortSignal): Promise<unknown> => {
    if (isWrite(request)) writes.check(name);
    const once = async (): Promise<unknown> => {
      try {
        return (await transport.request(name, request, { timeoutMs, ...(signal ? { signal } : {}) })).body;
      } catch (error) {
        if (error instanceof KubeError && (error.statusCode === 401 || error.statusCode === 403)) {
          throw new KubeError(name, authMessage(name, error.statusCode, need, where), error.statusCode, { reason: error.reason ?? '', transient: false, cause: error });
        }
        throw error;
      }
    };
    const started = Date.now();
    let attempts = 0;
    const counted = (): Promise<unknown> => {
      attempts += 1;
      return once();
    };
    try {
      return await withRetries(counted, policy, { ...(signal ? { signal } : {}), onRetry: (error, wait) => options.onRetry?.(name, error, wait) });
    } catch (error) {
      throw silenceOf(name, error, attempts, Date.now() - started, transport);
    }
  };
}

/** One watch stream, 401/403 turned into the RBAC line. */
function watchOver(transport: Transport, options: ConnectOptions): ClientCore['watch'] {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const watchIdleMs = options.watchIdleMs ?? DEFAULT_WATCH_IDLE_MS;
  const random = options.random ?? Math.random;
  const where = transport.where;
  return async (name: string, need: RbacNeed, path: string, query: KubeRequest['query'], onEvent: (event: WatchEvent) => void, signal?: AbortSignal, hooks?: WatchHooks): Promise<void> => {
    try {
      // client-go's reflector: a server-side timeout in [5, 10) min, spread across clients
      const timeoutSeconds = 300 + Math.floor(random() * 300);
      await transport.watch(name, { method: 'GET', path, query: { ...query, watch: 1, allowWatchBookmarks: true, timeoutSeconds } }, onEvent, {
        connectTimeoutMs: timeoutMs,
        idleMs: watchIdleMs,
        ...(hooks?.onOpen ? { onOpen: hooks.onOpen } : {}),
        ...(signal ? { signal } : {}),
      });
    } catch (error) {
      if (error instanceof KubeError && (error.statusCode === 401 || error.statusCode === 403)) {
        throw new KubeError(name, authMessage(name, error.statusCode, need, where), error.statusCode, { transient: false });
      }
      throw error;
    }
  };
}

function coreOver(transport: Transport, options: ConnectOptions): ClientCore {
  const writes = options.writes ?? new WriteGate();
  const call = callOver(transport, options, writes);
  const getPod = async (namespace: string, name: string, signal?: AbortSignal): Promise<V1Pod | undefined> => {
    try {
      return (await call('get pod', { verb: 'get', resource: 'pods', namespace }, { method: 'GET', path: podPath(namespace, name) }, signal)) as V1Pod;
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  };

  const deleteWith = async (pod: { namespace: string; name: string; uid: string }, grace: number | undefined, callName: string, signal?: AbortSignal): Promise<'ok' | 'gone' | 'uid-changed'> => {
    try {
      await call(
        callName,
        { verb: 'delete', resource: 'pods', namespace: pod.namespace },
        {
          method: 'DELETE',
          path: podPath(pod.namespace, pod.name),
          body: { kind: 'DeleteOptions', apiVersion: 'v1', ...(grace !== undefined ? { gracePeriodSeconds: grace } : {}), preconditions: { uid: pod.uid } },
        },
        signal,
      );
      return 'ok';
    } catch (error) {
      if (isNotFound(error)) return 'gone';
      if (isConflict(error)) return 'uid-changed';
      throw error;
    }
  };

  const patchStatus = async (pod: { namespace: string; name: string; uid: string }, change: PodStatusChange, signal?: AbortSignal): Promise<StatusPatchOutcome> => {
    for (let attempt = 0; ; attempt += 1) {
      const current = await getPod(pod.namespace, pod.name, signal);
      if (!current) return 'gone';
      if (current.metadata?.uid !== pod.uid) return 'uid-changed';
      try {
        await call(
          'patch pod status',
          { verb: 'patch', resource: 'pods/status', namespace: pod.namespace },
          { method: 'PATCH', path: `${podPath(pod.namespace, pod.name)}/status`, contentType: 'application/strategic-merge-patch+json', body: statusPatch(current, change, new Date()) },
          signal,
        );
        return 'patched';
      } catch (error) {
        if (isNotFound(error)) return 'gone';
        // the pod changed between our read and our patch: read it again (bounded)
        if (isConflict(error) && attempt < 4) continue;
        throw error;
      }
    }
  };

  return { transport, node: options.node, where: transport.where, timeoutMs: options.timeoutMs ?? 10_000, writes, call, watch: watchOver(transport, options), getPod, deleteWith, patchStatus };
}

/** What the node restriction check reads: who the token is, whether the policy is served and in force. */
function restrictionMethods({ call }: ClientCore): Pick<KubeClient, 'selfSubject' | 'servesAdmissionPolicies' | 'getAdmissionObject'> {
  return {
    async selfSubject(signal) {
      const review = (await call(
        'self subject review',
        { verb: 'create', resource: 'selfsubjectreviews', group: 'authentication.k8s.io' },
        { method: 'POST', path: '/apis/authentication.k8s.io/v1/selfsubjectreviews', body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' } },
        signal,
      )) as { status?: { userInfo?: { username?: string; extra?: Record<string, string[]> } } };
      return { username: review.status?.userInfo?.username ?? '', extra: review.status?.userInfo?.extra ?? {} };
    },
    async servesAdmissionPolicies(signal) {
      try {
        const list = (await call('discover admissionregistration.k8s.io/v1', { verb: 'get', resource: 'discovery' }, { method: 'GET', path: admissionPath }, signal)) as {
          resources?: { name?: string }[];
        };
        return (list.resources ?? []).some((r) => r.name === 'validatingadmissionpolicies') && list.resources!.some((r) => r.name === 'validatingadmissionpolicybindings');
      } catch (error) {
        if (isNotFound(error)) return false;
        throw error;
      }
    },
    async getAdmissionObject(resource, name, signal) {
      try {
        return (await call(
          `get ${resource}`,
          { verb: 'get', resource, group: 'admissionregistration.k8s.io' },
          { method: 'GET', path: `${admissionPath}/${resource}/${encodeURIComponent(name)}` },
          signal,
        )) as AdmissionObject;
      } catch (error) {
        if (isNotFound(error)) return undefined;
        throw error;
      }
    },
  };
}

/** The node's pods as the API server holds them: listed, watched, read one by one. */
function podReadMethods({ call, watch, node, getPod }: ClientCore): Pick<KubeClient, 'listNodePods' | 'listNodePodsVersioned' | 'watchNodePods' | 'getPod'> {
  const fieldSelector = `spec.nodeName=${node}`;
  return {
    async listNodePods(signal) {
      return (await this.listNodePodsVersioned(signal)).pods;
    },
    async listNodePodsVersioned(signal, listOptions) {
      const list = (await call(
        'list pods',
        { verb: 'list', resource: 'pods' },
        { method: 'GET', path: '/api/v1/pods', query: { fieldSelector, ...(listOptions?.resourceVersion ? { resourceVersion: listOptions.resourceVersion } : {}) } },
        signal,
      )) as {
        items?: V1Pod[];
        metadata?: { resourceVersion?: string };
      };
      return { pods: list.items ?? [], resourceVersion: list.metadata?.resourceVersion ?? '' };
    },
    async watchNodePods(resourceVersion, onEvent, signal, hooks) {
      await watch('watch pods', { verb: 'watch', resource: 'pods' }, '/api/v1/pods', { fieldSelector, resourceVersion }, onEvent, signal, hooks);
    },
    getPod,
  };
}

/** Deletions, the eviction, Events and status of the node's pods. */
function podWriteMethods(core: ClientCore): Pick<KubeClient, 'deletePod' | 'finalDelete' | 'evictPod' | 'postEvent' | 'patchStatus' | 'markEvicted'> {
  const { call, node, deleteWith, patchStatus } = core;
  return {
    async deletePod(pod, grace, signal) {
      const outcome = await deleteWith(pod, grace, 'delete pod', signal);
      return outcome === 'ok' ? 'accepted' : outcome;
    },
    async finalDelete(pod, signal) {
      const outcome = await deleteWith(pod, 0, 'final delete of pod', signal);
      return outcome === 'ok' ? 'deleted' : outcome;
    },
    evictPod: evictOver(core),
    async postEvent(pod, type, reason, message, signal) {
      const { namespace, name: podName, uid } = ref(pod);
      const name = eventName(podName || 'pod', uid, reason);
      const involved = { apiVersion: 'v1', kind: 'Pod', name: podName, namespace, uid, ...(pod.metadata?.resourceVersion ? { resourceVersion: pod.metadata.resourceVersion } : {}) };
      const event = podctlEvent(node, { name, namespace }, involved, type, reason, message);
      try {
        await call('post event', { verb: 'create', resource: 'events', namespace }, { method: 'POST', path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/events`, body: event }, signal);
      } catch (error) {
        // the Event's name is the pod's UID and reason: AlreadyExists means this report is there already
        if (!isConflict(error)) throw error;
      }
    },
    patchStatus,
    async markEvicted(pod, message) {
      const outcome = await patchStatus(ref(pod), evictedStatus(message));
      if (outcome !== 'patched')
        throw new KubeError(
          'patch pod status',
          `patch pod status: pod ${ref(pod).namespace}/${ref(pod).name} ${outcome === 'gone' ? 'is gone from the API server' : 'was replaced (another UID)'}`,
          outcome === 'gone' ? 404 : 409,
          { transient: false },
        );
    },
  };
}

/** The Eviction API: accepted, gone, throttled, or blocked by a PodDisruptionBudget (429 naming it). */
function evictOver({ transport, writes, timeoutMs, where }: ClientCore): KubeClient['evictPod'] {
  return async (pod, grace, signal) => {
    writes.check('evict pod');
    const started = Date.now();
    try {
      await transport.request(
        'evict pod',
        {
          method: 'POST',
          path: `${podPath(pod.namespace, pod.name)}/eviction`,
          body: {
            apiVersion: 'policy/v1',
            kind: 'Eviction',
            metadata: { name: pod.name, namespace: pod.namespace },
            ...(grace !== undefined ? { deleteOptions: { gracePeriodSeconds: grace } } : {}),
          },
        },
        { timeoutMs, ...(signal ? { signal } : {}) },
      );
      return { outcome: 'accepted' };
    } catch (error) {
      if (isNotFound(error)) return { outcome: 'gone' };
      if (error instanceof KubeError && error.statusCode === 429) {
        const cause = error.causes.find((c) => c.reason === 'DisruptionBudget');
        if (!cause) return { outcome: 'throttled', retryAfterMs: error.retryAfterMs, message: error.message };
        return { outcome: 'blocked-by-pdb', retryAfterMs: error.retryAfterMs, message: cause.message ?? error.message, ...budgetOf(cause.message ?? '') };
      }
      if (error instanceof KubeError && (error.statusCode === 401 || error.statusCode === 403)) {
        throw new KubeError('evict pod', authMessage('evict pod', error.statusCode, { verb: 'create', resource: 'pods/eviction', namespace: pod.namespace }, where), error.statusCode, {
          transient: false,
        });
      }
      throw silenceOf('evict pod', error, 1, Date.now() - started, transport);
    }
  };
}

/** The node itself: listed and watched, read, annotated, cordoned, its Events, its kubelet's Lease and the drain lock's Leases. */
function nodeMethods({
  call,
  watch,
  node,
}: ClientCore): Pick<KubeClient, 'listNodeVersioned' | 'watchNode' | 'getNode' | 'annotateNode' | 'postNodeEvent' | 'setUnschedulable' | 'nodeLeaseRenewedAt' | 'leases'> {
  const nodeSelector = `metadata.name=${node}`;
  const uid = new NodeUid(node, call);
  return {
    async listNodeVersioned(signal, listOptions) {
      const list = (await call(
        'list nodes',
        { verb: 'list', resource: 'nodes' },
        { method: 'GET', path: '/api/v1/nodes', query: { fieldSelector: nodeSelector, ...(listOptions?.resourceVersion ? { resourceVersion: listOptions.resourceVersion } : {}) } },
        signal,
      )) as { items?: V1Node[]; metadata?: { resourceVersion?: string } };
      uid.saw(list.items?.[0]);
      return { nodes: list.items ?? [], resourceVersion: list.metadata?.resourceVersion ?? '' };
    },
    async watchNode(resourceVersion, onEvent, signal, hooks) {
      await watch('watch node', { verb: 'watch', resource: 'nodes' }, '/api/v1/nodes', { fieldSelector: nodeSelector, resourceVersion }, onEvent, signal, hooks);
    },
    async getNode(signal) {
      try {
        const n = (await call('get node', { verb: 'get', resource: 'nodes' }, { method: 'GET', path: `/api/v1/nodes/${encodeURIComponent(node)}` }, signal)) as V1Node;
        uid.saw(n);
        const { annotations, unschedulable } = nodeView(n);
        return { annotations, unschedulable };
      } catch (error) {
        if (isNotFound(error)) return undefined;
        throw error;
      }
    },
    async annotateNode(annotations, signal) {
      await call(
        'annotate node',
        { verb: 'patch', resource: 'nodes' },
        { method: 'PATCH', path: `/api/v1/nodes/${encodeURIComponent(node)}`, contentType: 'application/strategic-merge-patch+json', body: { metadata: { annotations } } },
        signal,
      );
    },
    postNodeEvent: nodeEventOver(node, uid, call),
    async setUnschedulable(unschedulable, signal) {
      await call(
        'cordon node',
        { verb: 'patch', resource: 'nodes' },
        { method: 'PATCH', path: `/api/v1/nodes/${encodeURIComponent(node)}`, contentType: 'application/strategic-merge-patch+json', body: { spec: { unschedulable } } },
        signal,
      );
    },
    leases: (namespace: string) => leaseStore(call, namespace),
    async nodeLeaseRenewedAt(signal) {
      try {
        const lease = (await call(
          'get node lease',
          { verb: 'get', resource: 'leases', group: 'coordination.k8s.io', namespace: 'kube-node-lease' },
          { method: 'GET', path: `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${encodeURIComponent(node)}` },
          signal,
        )) as {
          spec?: { renewTime?: string };
        };
        return lease.spec?.renewTime ? new Date(lease.spec.renewTime) : undefined;
      } catch (error) {
        if (isNotFound(error)) return undefined;
        throw error;
      }
    },
  };
}

/** The budget's name and its disruptions left, from the cause's message ("The disruption budget db needs 2 healthy pods and has 2 currently"). */
function budgetOf(message: string): { budget: string | undefined; disruptionsAllowed: number } {
  const m = /disruption budget (\S+) needs (\d+) healthy pods and has (\d+) currently/.exec(message);
  if (!m) return { budget: /disruption budget (\S+)/.exec(message)?.[1], disruptionsAllowed: 0 };
  return { budget: m[1], disruptionsAllowed: Math.max(0, Number(m[3]) - Number(m[2])) };
}
