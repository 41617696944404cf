/**
 * The runtime-backed PodSyncer: the engine's four lifecycle operations carried out over CRI.
 *
 * podctl is not a kubelet: it never creates or starts anything. It observes running pods and
 * terminates them the way the kubelet's killPod does:
 *   1. per running container, in parallel: its preStop hook (exec via ExecSync, httpGet to the pod
 *      IP or the node, or sleep) within the grace period, then StopContainer(timeout = the grace
 *      that remains); with a pod spec, restartable init containers (sidecars) are stopped only after
 *      every main container has exited, in reverse spec order, within what is left of the grace;
 *   2. only when every container has stopped: StopPodSandbox (containerd SIGKILLs whatever still
 *      runs in a sandbox it stops, so it must come last);
 *   3. a check that nothing of the pod still runs, and a relist of the status cache.
 * What it stops is what the status it was handed shows (as the kubelet kills the running pod it
 * derives from the cached status): the cache's view of that relist when it is at most a relist
 * period (1 s) old, else a fresh listing by the pod's UID label. Step 3 always lists fresh, so a container the view missed
 * fails the attempt, and the engine's retry works from a newer relist.
 *
 * Invariants:
 * - The grace period is a deadline fixed when the attempt starts; a re-run with a shorter grace
 *   (the engine aborts the running attempt first) issues StopContainer again with the shorter
 *   timeout, which makes the runtime kill earlier. A preStop hook runs at most once per container.
 * - An aborted attempt cancels everything it started (RPCs, hook waits) through the same signal,
 *   waits for its lanes to settle, and rejects with `signal.reason`; nothing keeps running for it.
 * - Runtime failures surface as CriError (the engine retries with backoff); NotFound on stop or
 *   remove means "already gone" and is success.
 * - syncTerminatedPod removes containers and sandboxes only for evicted pods, pods annotated
 *   `podctl.io/remove=true`, or when the `removeOnTerminated` option says so.
 */
import type { V1HTTPGetAction, V1LifecycleHandler, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { Clock, PodStatus, PodSyncer, RunningPod, SyncPodType } from '../engine/types.js';
import type { CriClient, Container, PodSandbox } from './client.js';
import type { RuntimePodCache } from './cache.js';
import { ContainerStateCode, SandboxStateCode } from './codes.js';
import { processHookJournal, type HookJournal, type HookOutcomeKind, type HookType } from './hook-journal.js';
import { HookNotRunnable, hookUrl, NODE_ADDRESS, resolveHookPort, runHttpGet } from './http-hook.js';
import { isCriError, isNotFound } from './errors.js';
import { setLongTimeout } from '../engine/timers.js';
import { podOwnGracePeriod, RUNTIME_POD_GRACE_SECONDS } from '../engine/grace.js';
import { ANN_PRESTOP, ANN_REMOVE, LABEL_CONTAINER_NAME, LABEL_POD_UID, type RestartPolicy } from './kubelet-labels.js';
import { parsePreStop, type RuntimeContainer, type RuntimePod } from './pods.js';

/** The kubelet's minimum shutdown window after a preStop hook (minimumGracePeriodInSeconds). */
export const MINIMUM_GRACE_SECONDS = 2;
/** Grace for pods known only from the runtime: the engine's (engine/grace.ts). */
export { RUNTIME_POD_GRACE_SECONDS };

export type SyncerLog = (level: 'debug' | 'info' | 'warn' | 'error', message: string) => void;

export interface RuntimeSyncerOptions {
  client: CriClient;
  /** Refreshed after every action so the engine's next getNewerThan does not wait. */
  cache?: RuntimePodCache;
  clock?: Clock;
  /** Remove containers and sandboxes of every terminated pod (default: only evicted / annotated). */
  removeOnTerminated?: boolean;
  /** Extra "remove this pod's runtime objects" decision, e.g. the engine's `evicted` flag. */
  shouldRemove?: (pod: V1Pod) => boolean;
  log?: SyncerLog;
  /** Called for each preStop hook outcome (events/timeline). */
  onHook?: (event: { uid: string; container: string; ok: boolean; message: string }) => void;
  /** Where hook outcomes are recorded for the commands' results (default: the process's journal). */
  hookJournal?: HookJournal;
}

/** One runtime object view of a pod: from the status cache's relist, or listed by the UID label. */
interface PodRuntimeView {
  containers: Container[];
  sandboxes: PodSandbox[];
  /** Exit codes of exited containers the status cache already knows (by container ID). */
  exitCodes?: ReadonlyMap<string, number>;
}

/** The oldest status-cache relist whose view of a pod is stopped without listing it again (the kubelet's relist period), ms. */
const CACHED_VIEW_MAX_AGE_MS = 1_000;

const CONTAINER_STATE_CODES: Record<RuntimeContainer['state'], number> = {
  created: ContainerStateCode.CREATED,
  running: ContainerStateCode.RUNNING,
  exited: ContainerStateCode.EXITED,
  unknown: ContainerStateCode.UNKNOWN,
};

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(abortReason(signal));
    const t = setLongTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      t.clear();
      reject(abortReason(signal));
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

function podUid(pod: V1Pod): string {
  const uid = pod.metadata?.uid;
  if (!uid) throw new Error(`pod ${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''} has no UID`);
  return uid;
}

function podName(pod: V1Pod): string {
  return `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`;
}

function restartPolicyOf(pod: V1Pod): RestartPolicy {
  const p = pod.spec?.restartPolicy;
  return p === 'Never' || p === 'OnFailure' ? p : 'Always';
}

/** Throws the first failure of settled lanes (a CriError when there is one), after all settled. */
function throwFirstFailure(results: PromiseSettledResult<unknown>[]): void {
  const failures = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => r.reason as unknown);
  if (failures.length === 0) return;
  throw failures.find(isCriError) ?? failures[0];
}

/** A running container known only by ID and name (from a RunningPod the listing did not return). */
function containerStub(id: string, name: string): Container {
  return {
    id,
    podSandboxId: '',
    metadata: { name, attempt: 0 },
    image: undefined,
    imageRef: '',
    state: ContainerStateCode.RUNNING,
    createdAt: 0n,
    labels: {},
    annotations: {},
    imageId: '',
  };
}

/** A ready sandbox known only by ID. */
function sandboxStub(id: string): PodSandbox {
  return { id, metadata: undefined, state: SandboxStateCode.READY, createdAt: 0n, labels: {}, annotations: {}, runtimeHandler: '' };
}

/**
 * Whether a pod that podctl only observes is terminal: its restart policy says none of its
 * (newest) containers will run again. Never: all exited. OnFailure: all exited with 0. Always:
 * never terminal. Containers named in the spec but absent from the status have not run yet.
 */
export function isTerminalByRestartPolicy(pod: V1Pod, status: PodStatus | undefined): boolean {
  const policy = restartPolicyOf(pod);
  if (policy === 'Always' || !status) return false;
  const newest = new Map<string, PodStatus['containerStatuses'][number]>();
  for (const c of status.containerStatuses) if (!newest.has(c.name)) newest.set(c.name, c);
  const names = pod.spec?.containers?.map((c) => c.name) ?? [...newest.keys()];
  if (names.length === 0) return false;
  return names.every((name) => {
    const c = newest.get(name);
    if (!c || c.state !== 'exited') return false;
    return policy === 'Never' || c.exitCode === 0;
  });
}

/** A pod as the status cache relisted it, in the shape of a CRI listing. */
function viewOfRuntimePod(pod: RuntimePod): PodRuntimeView {
  return {
    sandboxes: pod.sandboxes.map((sb) => ({
      id: sb.id,
      metadata: undefined,
      state: sb.state === 'ready' ? SandboxStateCode.READY : SandboxStateCode.NOTREADY,
      createdAt: BigInt(sb.createdAt) * 1_000_000n,
      labels: sb.labels,
      annotations: sb.annotations,
      runtimeHandler: '',
    })),
    containers: pod.containers.map((c) => ({
      id: c.id,
      podSandboxId: c.sandboxId,
      metadata: { name: c.name, attempt: c.attempt },
      image: undefined,
      imageRef: '',
      state: CONTAINER_STATE_CODES[c.state],
      createdAt: BigInt(c.createdAt) * 1_000_000n,
      labels: c.labels,
      annotations: c.annotations,
      imageId: '',
    })),
    exitCodes: new Map(pod.containers.flatMap((c) => (c.state === 'exited' && c.exitCode !== undefined ? [[c.id, c.exitCode] as const] : []))),
  };
}

function containerNameOf(c: Container): string {
  return c.labels?.[LABEL_CONTAINER_NAME] ?? c.metadata?.name ?? c.id;
}

/** The names of a pod's restartable init containers (initContainers[].restartPolicy: Always), in spec order. */
export function sidecarNames(pod: V1Pod): string[] {
  return (pod.spec?.initContainers ?? []).filter((c) => c.restartPolicy === 'Always').map((c) => c.name);
}

/**
 * Which containers of a pod must exit before which: the kubelet's termination ordering. A sidecar
 * waits for every running main container and every running sidecar after it in spec order; main
 * containers wait for nothing. A container that fails to stop never signals its exit, so those
 * waiting on it wait until their bound (the grace that remains), as in the kubelet.
 */
export interface TerminationOrdering {
  /** Resolves when the container may be stopped or `ms` passed; true when it waited on anything. */
  waitForTurn(name: string, ms: number, signal: AbortSignal): Promise<boolean>;
  containerTerminated(name: string): void;
}

/** The ordering for a pod with a spec, or undefined when it has no running sidecar (all parallel). */
export function terminationOrdering(pod: V1Pod, runningNames: readonly string[]): TerminationOrdering | undefined {
  const sidecars = sidecarNames(pod);
  const running = new Set(runningNames);
  if (!sidecars.some((n) => running.has(n))) return undefined;
  const exited = new Map<string, { promise: Promise<void>; resolve: () => void }>();
  for (const name of running) {
    let resolve!: () => void;
    const promise = new Promise<void>((r) => (resolve = r));
    exited.set(name, { promise, resolve });
  }
  const sidecarSet = new Set(sidecars);
  const prerequisites = new Map<string, string[]>();
  const mains = [...running].filter((n) => !sidecarSet.has(n));
  sidecars.forEach((name, i) => {
    if (!running.has(name)) return;
    prerequisites.set(name, [...mains, ...sidecars.slice(i + 1).filter((n) => running.has(n))]);
  });
  return {
    async waitForTurn(name, ms, signal) {
      const before = prerequisites.get(name) ?? [];
      if (before.length === 0) return false;
      const ac = new AbortController();
      const onAbort = (): void => ac.abort(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      try {
        await Promise.race([Promise.all(before.map((n) => exited.get(n)?.promise ?? Promise.resolve())), sleep(ms, ac.signal)]);
      } finally {
        signal.removeEventListener('abort', onAbort);
        ac.abort();
      }
      signal.throwIfAborted();
      return true;
    },
    containerTerminated(name) {
      exited.get(name)?.resolve();
    },
  };
}

export class RuntimeSyncer implements PodSyncer {
  #client: CriClient;
  #cache: RuntimePodCache | undefined;
  #clock: Clock;
  #removeOnTerminated: boolean;
  #shouldRemove: ((pod: V1Pod) => boolean) | undefined;
  #log: SyncerLog;
  #onHook: RuntimeSyncerOptions['onHook'];
  #hookJournal: HookJournal;
  /** Containers whose preStop hook has started: it never runs twice. */
  #hooksStarted = new Set<string>();
  /** Pods whose final status was marked Evicted by the engine's podStatusFn. */
  #evicted = new Set<string>();
  /** Final API statuses reported through podStatusFn, by UID. */
  #finalStatuses = new Map<string, V1PodStatus>();

  constructor(options: RuntimeSyncerOptions) {
    this.#client = options.client;
    this.#cache = options.cache;
    this.#clock = options.clock ?? { now: () => Date.now() };
    this.#removeOnTerminated = options.removeOnTerminated ?? false;
    this.#shouldRemove = options.shouldRemove;
    this.#log = options.log ?? (() => undefined);
    this.#onHook = options.onHook;
    this.#hookJournal = options.hookJournal ?? processHookJournal;
  }

  /** The final V1PodStatus of a terminated pod (after podStatusFn), if this syncer produced one. */
  finalStatus(uid: string): V1PodStatus | undefined {
    return this.#finalStatuses.get(uid);
  }

  // ------------------------------------------------------------------------------- syncPod

  async syncPod(
    signal: AbortSignal,
    _updateType: SyncPodType,
    pod: V1Pod,
    _mirrorPod: V1Pod | undefined,
    podStatus: PodStatus | undefined,
  ): Promise<boolean> {
    signal.throwIfAborted();
    const status = podStatus ?? this.#cache?.get(podUid(pod));
    return isTerminalByRestartPolicy(pod, status);
  }

  // ------------------------------------------------------------------- syncTerminatingPod

  async syncTerminatingPod(
    signal: AbortSignal,
    pod: V1Pod,
    podStatus: PodStatus | undefined,
    gracePeriodSeconds: number | undefined,
    podStatusFn: ((s: V1PodStatus) => void) | undefined,
  ): Promise<void> {
    const uid = podUid(pod);
    // the engine passes the grace in force; without one, the pod's own as the engine reads it
    const grace = Math.max(0, gracePeriodSeconds ?? podOwnGracePeriod(pod));
    const deadline = this.#clock.now() + grace * 1000;
    this.#log('debug', `terminating ${podName(pod)} with grace ${grace}s`);
    try {
      const view = (podStatus !== undefined ? this.#cachedView(uid) : undefined) ?? (await this.#listPod(uid, signal));
      await this.#killPod(signal, uid, view, deadline, grace, pod);
      const after = await this.#verifyStopped(uid, signal);
      if (podStatusFn) await this.#reportFinalStatus(uid, after, podStatusFn, signal);
    } finally {
      this.#refreshCacheAfterReturn();
    }
  }

  async syncTerminatingRuntimePod(signal: AbortSignal, runningPod: RunningPod): Promise<void> {
    const uid = runningPod.id;
    const grace = RUNTIME_POD_GRACE_SECONDS;
    const deadline = this.#clock.now() + grace * 1000;
    this.#log('debug', `terminating runtime pod ${runningPod.namespace}/${runningPod.name} with grace ${grace}s`);
    try {
      const view = await this.#listPod(uid, signal);
      // objects the caller saw that the label listing does not return (no kubelet labels)
      const known = new Set(view.containers.map((c) => c.id));
      for (const c of runningPod.containers) {
        if (known.has(c.id) || c.state !== 'running') continue;
        view.containers.push(containerStub(c.id, c.name));
      }
      const knownSb = new Set(view.sandboxes.map((s) => s.id));
      for (const s of runningPod.sandboxes) {
        if (knownSb.has(s.id) || s.state !== 'ready') continue;
        view.sandboxes.push(sandboxStub(s.id));
      }
      await this.#killPod(signal, uid, view, deadline, grace, undefined);
      await this.#verifyStopped(uid, signal);
    } finally {
      this.#refreshCacheAfterReturn();
    }
  }

  // --------------------------------------------------------------------- syncTerminatedPod

  async syncTerminatedPod(signal: AbortSignal, pod: V1Pod, podStatus: PodStatus | undefined): Promise<void> {
    const uid = podUid(pod);
    const removal = this.#wantsRemoval(pod);
    // The final check: nothing of the pod may run. The status the engine hands over comes from a
    // relist started after the terminating sync returned; when it shows nothing running and nothing
    // is to be removed, it is that check, and no further listing or relist is needed.
    if (!removal && podStatus !== undefined && podStatus.id === uid) {
      signal.throwIfAborted();
      if (!podStatus.containerStatuses.some((c) => c.state === 'running')) return;
    }
    try {
      const view = await this.#verifyStopped(uid, signal);
      if (!removal) return;
      const removals = await Promise.allSettled(
        view.containers.map((c) => this.#ignoreNotFound(this.#client.removeContainer(c.id, { signal }))),
      );
      signal.throwIfAborted();
      throwFirstFailure(removals);
      for (const c of view.containers) this.#hooksStarted.delete(c.id);
      const sbRemovals = await Promise.allSettled(
        view.sandboxes.map((s) => this.#ignoreNotFound(this.#client.removePodSandbox(s.id, { signal }))),
      );
      signal.throwIfAborted();
      throwFirstFailure(sbRemovals);
      this.#evicted.delete(uid);
      this.#log('info', `removed ${view.containers.length} containers and ${view.sandboxes.length} sandboxes of ${podName(pod)}`);
    } finally {
      this.#refreshCache();
    }
  }

  // ------------------------------------------------------------------------------ killPod

  /**
   * Stops every running container, then the sandboxes. Every lane starts at once (preStop hooks run
   * in parallel); with a pod spec that has restartable init containers (sidecars), a sidecar's
   * StopContainer waits for its turn: until every main container and every sidecar after it in spec
   * order has exited, bounded by what is left of the grace (the kubelet's termination ordering).
   */
  async #killPod(
    signal: AbortSignal,
    uid: string,
    view: PodRuntimeView,
    deadline: number,
    grace: number,
    pod: V1Pod | undefined,
  ): Promise<void> {
    const running = view.containers.filter((c) => c.state === ContainerStateCode.RUNNING);
    const ordering = pod ? terminationOrdering(pod, running.map((c) => containerNameOf(c))) : undefined;
    if (ordering) this.#log('debug', `${podName(pod!)}: sidecars ${sidecarNames(pod!).join(', ')} stop after the main containers`);
    const lanes = await Promise.allSettled(running.map((c) => this.#killContainer(signal, uid, c, deadline, grace, pod, ordering)));
    signal.throwIfAborted();
    throwFirstFailure(lanes);

    const ready = view.sandboxes.filter((s) => s.state === SandboxStateCode.READY);
    const stops = await Promise.allSettled(ready.map((s) => this.#ignoreNotFound(this.#client.stopPodSandbox(s.id, { signal }))));
    signal.throwIfAborted();
    throwFirstFailure(stops);
  }

  /** One container's lane: its preStop hook (once, within the grace), its turn (sidecars), then StopContainer. */
  async #killContainer(
    signal: AbortSignal,
    uid: string,
    c: Container,
    deadline: number,
    grace: number,
    pod: V1Pod | undefined,
    ordering: TerminationOrdering | undefined,
  ): Promise<void> {
    const name = containerNameOf(c);
    const hook = this.#preStopOf(pod, name, c);
    let ranHook = false;
    if (hook && grace > 0 && !this.#hooksStarted.has(c.id)) {
      this.#hooksStarted.add(c.id);
      ranHook = true;
      await this.#runPreStop(signal, uid, c, name, hook, deadline, pod);
    }
    let waited = false;
    if (ordering && deadline > this.#clock.now()) waited = await ordering.waitForTurn(name, deadline - this.#clock.now(), signal);
    const remaining = Math.ceil((deadline - this.#clock.now()) / 1000);
    // after a hook or a wait for its turn, the kubelet always leaves a short shutdown window (never more than the grace)
    const floor = ranHook || waited ? Math.min(MINIMUM_GRACE_SECONDS, grace) : 0;
    const timeout = Math.max(remaining, floor, 0);
    this.#log('debug', `StopContainer ${name} (${c.id.slice(0, 12)}) timeout ${timeout}s`);
    await this.#ignoreNotFound(this.#client.stopContainer(c.id, timeout, { signal }));
    ordering?.containerTerminated(name);
  }

  #preStopOf(pod: V1Pod | undefined, name: string, c: Container): V1LifecycleHandler | undefined {
    const fromSpec = [...(pod?.spec?.containers ?? []), ...(pod?.spec?.initContainers ?? [])].find((x) => x.name === name)?.lifecycle?.preStop;
    return fromSpec ?? parsePreStop(c.annotations?.[ANN_PRESTOP]);
  }

  /**
   * Runs a preStop hook bounded by the grace deadline; failures are reported, not fatal. Every hook
   * ends in the hook journal: succeeded, failed, or not-run (it could not be run at all).
   */
  async #runPreStop(
    signal: AbortSignal,
    uid: string,
    c: Container,
    name: string,
    hook: V1LifecycleHandler,
    deadline: number,
    pod: V1Pod | undefined,
  ): Promise<void> {
    const started = this.#clock.now();
    const remainingMs = deadline - started;
    const type: HookType = hook.exec?.command?.length ? 'exec' : hook.sleep ? 'sleep' : hook.httpGet ? 'httpGet' : 'unknown';
    const report = (outcome: HookOutcomeKind, message: string): void => {
      const ok = outcome === 'succeeded';
      this.#log(ok ? 'debug' : 'warn', `preStop hook of ${name}: ${message}`);
      this.#onHook?.({ uid, container: name, ok, message });
      this.#hookJournal.record({ uid, container: name, type, outcome, ms: Math.max(0, this.#clock.now() - started), message });
    };
    if (remainingMs <= 0) return report('not-run', 'no grace left to run it');
    try {
      if (type === 'exec') {
        const seconds = Math.max(1, Math.ceil(remainingMs / 1000));
        const res = await this.#client.execSync(c.id, hook.exec?.command ?? [], seconds, { signal });
        report(res.exitCode === 0 ? 'succeeded' : 'failed', `exec exited ${res.exitCode}${res.stderr ? `: ${res.stderr.trim()}` : ''}`);
      } else if (type === 'sleep') {
        const ms = Math.min(Math.max(0, Number(hook.sleep?.seconds) * 1000), remainingMs);
        await sleep(ms, signal);
        report('succeeded', `slept ${Math.round(ms / 100) / 10}s`);
      } else if (type === 'httpGet' && hook.httpGet) {
        await this.#runHttpGet(signal, c, name, hook.httpGet, deadline, pod, report);
      } else {
        report('not-run', 'the preStop handler has no exec, httpGet or sleep action; skipped');
      }
    } catch (err) {
      if (signal.aborted) throw abortReason(signal);
      report(err instanceof HookNotRunnable ? 'not-run' : 'failed', err instanceof Error ? err.message : String(err));
    }
  }

  /** An httpGet hook: host from the handler, else the node (host network) or the pod IP from the sandbox status. */
  async #runHttpGet(
    signal: AbortSignal,
    c: Container,
    name: string,
    action: V1HTTPGetAction,
    deadline: number,
    pod: V1Pod | undefined,
    report: (outcome: HookOutcomeKind, message: string) => void,
  ): Promise<void> {
    let host = action.host ?? '';
    if (host === '') {
      if (pod?.spec?.hostNetwork === true) host = NODE_ADDRESS;
      else {
        if (!c.podSandboxId) throw new HookNotRunnable('the container\'s sandbox is unknown, so the pod IP is unknown');
        const status = (await this.#client.podSandboxStatus(c.podSandboxId, { signal })).status;
        if (!status) throw new HookNotRunnable('the sandbox status is empty, so the pod IP is unknown');
        // a sandbox in the node's network namespace has no IP of its own (the kubelet uses the node's)
        host = status.network?.ip || NODE_ADDRESS;
      }
    }
    const spec = [...(pod?.spec?.containers ?? []), ...(pod?.spec?.initContainers ?? [])].find((x) => x.name === name);
    const port = resolveHookPort(action.port, spec?.ports ?? []);
    const url = hookUrl(action, host, port);
    const res = await runHttpGet(url, action.httpHeaders, deadline - this.#clock.now(), signal);
    const ok = res.status >= 200 && res.status < 400;
    report(ok ? 'succeeded' : 'failed', `GET ${url.href} answered ${res.status}${ok || !res.body ? '' : `: ${res.body.trim().slice(0, 200)}`}`);
  }

  // ---------------------------------------------------------------------------- helpers

  async #listPod(uid: string, signal: AbortSignal): Promise<PodRuntimeView> {
    const selector = { labelSelector: { [LABEL_POD_UID]: uid } };
    const [sandboxes, containers] = await Promise.all([
      this.#client.listPodSandbox(selector, { signal }),
      this.#client.listContainers(selector, { signal }),
    ]);
    return { sandboxes, containers };
  }

  /**
   * The pod's runtime objects as the status cache last relisted them: at least as new as the status
   * the engine handed over, which came from that cache. Undefined without a cache, when the relist
   * is older than the kubelet's relist period, or when it did not see the pod (then it is listed
   * by label).
   */
  #cachedView(uid: string): PodRuntimeView | undefined {
    const observedAt = this.#cache?.observedAt;
    if (observedAt === undefined || this.#clock.now() - observedAt > CACHED_VIEW_MAX_AGE_MS) return undefined;
    const pod = this.#cache?.pod(uid);
    return pod ? viewOfRuntimePod(pod) : undefined;
  }

  /**
   * The pod's runtime objects from a listing that started after this call. With a status cache
   * that is a relist of the cache (one relist serves every pod whose stops end meanwhile: 50 pods
   * stopped together cost a few relists, not 50 listings), else a listing by the pod's UID label.
   */
  async #listPodFresh(uid: string, signal: AbortSignal): Promise<PodRuntimeView> {
    if (!this.#cache) return this.#listPod(uid, signal);
    await this.#cache.refresh(signal);
    const pod = this.#cache.pod(uid);
    return pod ? viewOfRuntimePod(pod) : { containers: [], sandboxes: [] };
  }

  /** Lists the pod again and throws when any of its containers still runs. */
  async #verifyStopped(uid: string, signal: AbortSignal): Promise<PodRuntimeView> {
    const view = await this.#listPodFresh(uid, signal);
    const running = view.containers.filter((c) => c.state === ContainerStateCode.RUNNING);
    if (running.length > 0) {
      const names = running.map((c) => c.labels?.[LABEL_CONTAINER_NAME] ?? c.metadata?.name ?? c.id.slice(0, 12));
      throw new Error(`pod ${uid} still has ${running.length} running container(s): ${names.join(', ')}`);
    }
    return view;
  }

  /**
   * Builds the final API status (Succeeded when every newest container exited 0, else Failed),
   * hands it to podStatusFn (eviction marks it Failed/Evicted), and remembers an eviction.
   */
  async #reportFinalStatus(
    uid: string,
    view: PodRuntimeView,
    podStatusFn: (s: V1PodStatus) => void,
    signal: AbortSignal,
  ): Promise<void> {
    const newest = new Map<string, Container>();
    for (const c of [...view.containers].sort((a, b) => Number(b.createdAt - a.createdAt))) {
      const name = c.labels?.[LABEL_CONTAINER_NAME] ?? c.metadata?.name ?? c.id;
      if (!newest.has(name)) newest.set(name, c);
    }
    const exitCodes = await Promise.all(
      [...newest.values()].map(async (c) => {
        const known = view.exitCodes?.get(c.id);
        if (known !== undefined) return known;
        try {
          return (await this.#client.containerStatus(c.id, { signal })).status?.exitCode;
        } catch (err) {
          if (isNotFound(err)) return undefined;
          throw err;
        }
      }),
    );
    const failed = exitCodes.length === 0 || exitCodes.some((code) => code !== 0);
    const status: V1PodStatus = { phase: failed ? 'Failed' : 'Succeeded' };
    podStatusFn(status);
    if (status.reason === 'Evicted') this.#evicted.add(uid);
    this.#finalStatuses.set(uid, status);
  }

  #wantsRemoval(pod: V1Pod): boolean {
    if (this.#removeOnTerminated) return true;
    if (pod.metadata?.annotations?.[ANN_REMOVE] === 'true') return true;
    if (this.#evicted.has(podUid(pod))) return true;
    if (pod.status?.reason === 'Evicted') return true;
    return this.#shouldRemove?.(pod) ?? false;
  }

  async #ignoreNotFound(p: Promise<void>): Promise<void> {
    try {
      await p;
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  #refreshCache(): void {
    this.#cache?.refresh().catch(() => undefined);
  }

  /**
   * Relists once the caller has taken in this call's return: the engine stamps the end of a sync
   * right after it, and its next phase waits for a status newer than that stamp. A relist started
   * on the next turn of the event loop carries a stamp at or after it, so the next phase joins this
   * relist (already running while the worker writes its checkpoint) instead of starting another.
   */
  #refreshCacheAfterReturn(): void {
    if (this.#cache) setImmediate(() => this.#refreshCache());
  }
}
