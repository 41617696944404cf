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
 *   3. a check that nothing of the pod still runs, and a relist of the status cache (while other
 *      pods' stops are in flight, both share the cache's deferred relist: see #listPodAfterStops).
 * What it stops is what the status it was handed shows (as the kubelet kills the running pod it
 * derives from the cached status): the cache's view of that relist when it is at most a relist
 * period (1 s) old, else a fresh listing by the pod's UID label. Step 3 always lists fresh, so a container the view missed
 * fails the attempt, and the engine's retry works from a newer relist.
 * The hooks are prestop.ts's, the sidecar ordering stop-order.ts's, the pod's runtime objects
 * pod-view.ts's; this file drives them and owns the listings, the stops and the removals.
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
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { Clock, PodStatus, PodSyncer, RunningPod, SyncPodType } from '../../engine/types.js';
import type { CriClient, Container } from '../client/client.js';
import type { RuntimePodCache } from '../cache/cache.js';
import { ContainerStateCode, SandboxStateCode } from '../client/codes.js';
import { processHookJournal, type HookJournal } from './hook-journal.js';
import { isCriError, isNotFound } from '../client/errors.js';
import { podOwnGracePeriod, RUNTIME_POD_GRACE_SECONDS } from '../../engine/grace.js';
import { ANN_REMOVE, LABEL_CONTAINER_NAME, LABEL_POD_UID, type RestartPolicy } from '../client/kubelet-labels.js';
import { containerNameOf, containerStub, sandboxStub, viewOfRuntimePod, type PodRuntimeView } from './pod-view.js';
import { PreStopHooks, type HookEvent, type SyncerLog } from './prestop.js';
import type { RuntimeStep } from '../../domain/session-api.js';
import { sidecarNames, terminationOrdering, type TerminationOrdering } from './stop-order.js';

/** The kubelet's minimum shutdown window after a preStop hook (minimumGracePeriodInSeconds). */
const MINIMUM_GRACE_SECONDS = 2;
/** Grace for pods known only from the runtime: the engine's (engine/grace.ts). */
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
  onHook?: (event: HookEvent) => void;
  /**
   * Called for each step of a pod's termination as it ends (its timeline, read by the drain
   * report): every preStop hook, every container's stop (how it ended: SIGTERM or SIGKILL), every
   * sandbox stop, the removal. A throwing listener stops nothing (it is not called again for the step).
   */
  onStep?: (uid: string, step: RuntimeStep) => void;
  /** Where hook outcomes are recorded for the commands' results (default: the process's journal). */
  hookJournal?: HookJournal;
}

/** The exit code of a container the runtime SIGKILLed (128 + 9), as containerd and the simulator report it. */
const SIGKILL_EXIT_CODE = 137;

/** One container's StopContainer in an attempt: when SIGTERM went out, when the call returned, with what timeout. */
interface ContainerStop {
  name: string;
  id: string;
  sidecar: boolean;
  from: number;
  at: number;
  timeoutSeconds: number;
}

/** The timeline step of a container's stop, its outcome read from its exit code (unknown: 'stopped'). */
function stepOfStop(stop: ContainerStop, exitCode: number | undefined): RuntimeStep {
  const killed = exitCode === SIGKILL_EXIT_CODE;
  const outcome = exitCode === undefined ? 'stopped' : killed ? (stop.timeoutSeconds > 0 ? 'killed-at-deadline' : 'killed') : 'exited';
  const what = stop.sidecar ? `sidecar ${stop.name}` : `container ${stop.name}`;
  const detail =
    outcome === 'killed-at-deadline'
      ? `${what} did not exit on SIGTERM: SIGKILL at its grace deadline (StopContainer timeout ${stop.timeoutSeconds}s, exit 137)`
      : outcome === 'killed'
        ? `${what} SIGKILLed at once: no grace left (exit 137)`
        : outcome === 'exited'
          ? `${what} exited on SIGTERM (exit ${exitCode})`
          : `${what} stopped (exit code unknown)`;
  return {
    type: 'container-stopped',
    at: stop.at,
    from: stop.from,
    subject: stop.name,
    kind: stop.sidecar ? 'sidecar' : 'container',
    outcome,
    detail,
    ...(exitCode !== undefined ? { exitCode } : {}),
  };
}

/** The oldest status-cache relist whose view of a pod is stopped without listing it again (the kubelet's relist period), ms. */
const CACHED_VIEW_MAX_AGE_MS = 1_000;

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

export class RuntimeSyncer implements PodSyncer {
  #client: CriClient;
  #cache: RuntimePodCache | undefined;
  #clock: Clock;
  #removeOnTerminated: boolean;
  #shouldRemove: ((pod: V1Pod) => boolean) | undefined;
  #log: SyncerLog;
  #hooks: PreStopHooks;
  #onStep: ((uid: string, step: RuntimeStep) => void) | undefined;
  /** Pods whose final status was marked Evicted by the engine's podStatusFn. */
  #evicted = new Set<string>();
  /** Final API statuses reported through podStatusFn, by UID. */
  #finalStatuses = new Map<string, V1PodStatus>();
  /** Pods whose stop calls are in flight (see #stopping and #listPodAfterStops). */
  #podsStopping = 0;

  constructor(options: RuntimeSyncerOptions) {
    this.#client = options.client;
    this.#cache = options.cache;
    this.#clock = options.clock ?? { now: () => Date.now() };
    this.#removeOnTerminated = options.removeOnTerminated ?? false;
    this.#shouldRemove = options.shouldRemove;
    this.#log = options.log ?? (() => undefined);
    this.#onStep = options.onStep;
    const onHook = options.onHook;
    this.#hooks = new PreStopHooks({
      client: this.#client,
      clock: this.#clock,
      log: this.#log,
      onHook: (event) => {
        onHook?.(event);
        this.#step(event.uid, {
          type: 'prestop',
          at: event.endedAt,
          from: event.startedAt,
          subject: event.container,
          kind: event.type,
          outcome: event.outcome,
          detail: `preStop ${event.type} hook of container ${event.container} ${event.outcome === 'not-run' ? 'did not run' : event.outcome}: ${event.message}`,
        });
      },
      hookJournal: options.hookJournal ?? processHookJournal,
    });
  }

  /** The final V1PodStatus of a terminated pod (after podStatusFn), if this syncer produced one. */
  finalStatus(uid: string): V1PodStatus | undefined {
    return this.#finalStatuses.get(uid);
  }

  // ------------------------------------------------------------------------------- syncPod

  async syncPod(signal: AbortSignal, _updateType: SyncPodType, pod: V1Pod, _mirrorPod: V1Pod | undefined, podStatus: PodStatus | undefined): Promise<boolean> {
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
    const stops: ContainerStop[] = [];
    let after: PodRuntimeView | undefined;
    try {
      // a view the cache cannot vouch for comes from a fresh relist, which pods killed together share
      const view = (podStatus !== undefined ? this.#cachedView(uid) : undefined) ?? (await this.#listPodFresh(uid, signal));
      await this.#stopping(() => this.#killPod(signal, uid, view, deadline, grace, pod, stops));
      after = await this.#verifyStopped(uid, signal, true);
      if (podStatusFn) await this.#reportFinalStatus(uid, after, podStatusFn, signal);
    } finally {
      await this.#stopsEnded(uid, stops, after, signal);
      this.#refreshCacheAfterReturn(uid);
    }
  }

  async syncTerminatingRuntimePod(signal: AbortSignal, runningPod: RunningPod): Promise<void> {
    const uid = runningPod.id;
    const grace = RUNTIME_POD_GRACE_SECONDS;
    const deadline = this.#clock.now() + grace * 1000;
    this.#log('debug', `terminating runtime pod ${runningPod.namespace}/${runningPod.name} with grace ${grace}s`);
    const stops: ContainerStop[] = [];
    let after: PodRuntimeView | undefined;
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
      await this.#stopping(() => this.#killPod(signal, uid, view, deadline, grace, undefined, stops));
      after = await this.#verifyStopped(uid, signal, true);
    } finally {
      await this.#stopsEnded(uid, stops, after, signal);
      this.#refreshCacheAfterReturn(uid);
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
      const from = this.#clock.now();
      const removed = (outcome: 'succeeded' | 'failed', detail: string): void =>
        this.#step(uid, { type: 'removed', at: this.#clock.now(), from, outcome, detail: `${view.containers.length} container(s) and ${view.sandboxes.length} sandbox(es) ${detail}` });
      try {
        await this.#removeAll(view, signal);
      } catch (error) {
        if (!signal.aborted) removed('failed', `not all removed: ${(error as Error).message}`);
        throw error;
      }
      removed('succeeded', 'removed');
      this.#evicted.delete(uid);
      this.#log('info', `removed ${view.containers.length} containers and ${view.sandboxes.length} sandboxes of ${podName(pod)}`);
    } finally {
      this.#refreshCache();
    }
  }

  /** Removes the view's containers, then its sandboxes (NotFound: already gone). */
  async #removeAll(view: PodRuntimeView, signal: AbortSignal): Promise<void> {
    const removals = await Promise.allSettled(view.containers.map((c) => this.#ignoreNotFound(this.#client.removeContainer(c.id, { signal }))));
    signal.throwIfAborted();
    throwFirstFailure(removals);
    for (const c of view.containers) this.#hooks.forget(c.id);
    const sbRemovals = await Promise.allSettled(view.sandboxes.map((s) => this.#ignoreNotFound(this.#client.removePodSandbox(s.id, { signal }))));
    signal.throwIfAborted();
    throwFirstFailure(sbRemovals);
  }

  // ------------------------------------------------------------------------------ killPod

  /**
   * Stops every running container, then the sandboxes. Every lane starts at once (preStop hooks run
   * in parallel); with a pod spec that has restartable init containers (sidecars), a sidecar's
   * StopContainer waits for its turn: until every main container and every sidecar after it in spec
   * order has exited, bounded by what is left of the grace (the kubelet's termination ordering).
   */
  async #killPod(signal: AbortSignal, uid: string, view: PodRuntimeView, deadline: number, grace: number, pod: V1Pod | undefined, stops: ContainerStop[]): Promise<void> {
    const running = view.containers.filter((c) => c.state === ContainerStateCode.RUNNING);
    const ordering = pod
      ? terminationOrdering(
          pod,
          running.map((c) => containerNameOf(c)),
        )
      : undefined;
    if (ordering) this.#log('debug', `${podName(pod!)}: sidecars ${sidecarNames(pod!).join(', ')} stop after the main containers`);
    const sidecars = new Set(pod ? sidecarNames(pod) : []);
    const lanes = await Promise.allSettled(running.map((c) => this.#killContainer(signal, uid, c, deadline, grace, pod, ordering, sidecars, stops)));
    signal.throwIfAborted();
    throwFirstFailure(lanes);

    const ready = view.sandboxes.filter((s) => s.state === SandboxStateCode.READY);
    const sandboxStops = await Promise.allSettled(ready.map((s) => this.#stopSandbox(signal, uid, s.id)));
    signal.throwIfAborted();
    throwFirstFailure(sandboxStops);
  }

  /** StopPodSandbox, its step in the pod's timeline (a failure too: a network teardown that fails is named there). */
  async #stopSandbox(signal: AbortSignal, uid: string, id: string): Promise<void> {
    const from = this.#clock.now();
    try {
      await this.#ignoreNotFound(this.#client.stopPodSandbox(id, { signal }));
    } catch (error) {
      if (!signal.aborted)
        this.#step(uid, {
          type: 'sandbox-stopped',
          at: this.#clock.now(),
          from,
          subject: id.slice(0, 12),
          outcome: 'failed',
          detail: `StopPodSandbox ${id.slice(0, 12)} failed: ${(error as Error).message}`,
        });
      throw error;
    }
    this.#step(uid, { type: 'sandbox-stopped', at: this.#clock.now(), from, subject: id.slice(0, 12), outcome: 'succeeded', detail: `sandbox ${id.slice(0, 12)} stopped` });
  }

  /**
   * Each container stopped in an attempt, as a step of the pod's timeline, its outcome from the exit
   * codes the check after it saw; an attempt that failed after its stops (a sandbox stop) lists the
   * pod once more for them (best effort: a listing that fails leaves the outcomes unknown).
   */
  async #stopsEnded(uid: string, stops: ContainerStop[], after: PodRuntimeView | undefined, signal: AbortSignal): Promise<void> {
    if (stops.length === 0) return;
    const view = after ?? (signal.aborted ? undefined : await this.#listPodFresh(uid, signal).catch(() => undefined));
    for (const stop of stops) this.#step(uid, stepOfStop(stop, view?.exitCodes?.get(stop.id)));
  }

  #step(uid: string, step: RuntimeStep): void {
    try {
      this.#onStep?.(uid, step);
    } catch (error) {
      this.#log('debug', `step listener: ${(error as Error).message}`);
    }
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
    sidecars: ReadonlySet<string>,
    stops: ContainerStop[],
  ): Promise<void> {
    const name = containerNameOf(c);
    const ranHook = await this.#hooks.runOnce(signal, uid, c, name, deadline, grace, pod);
    let waited = false;
    if (ordering && deadline > this.#clock.now()) waited = await ordering.waitForTurn(name, deadline - this.#clock.now(), signal);
    const remaining = Math.ceil((deadline - this.#clock.now()) / 1000);
    // after a hook or a wait for its turn, the kubelet always leaves a short shutdown window (never more than the grace)
    const floor = ranHook || waited ? Math.min(MINIMUM_GRACE_SECONDS, grace) : 0;
    const timeout = Math.max(remaining, floor, 0);
    this.#log('debug', `StopContainer ${name} (${c.id.slice(0, 12)}) timeout ${timeout}s`);
    const from = this.#clock.now();
    await this.#ignoreNotFound(this.#client.stopContainer(c.id, timeout, { signal }));
    stops.push({ name, id: c.id, sidecar: sidecars.has(name), from, at: this.#clock.now(), timeoutSeconds: timeout });
    ordering?.containerTerminated(name);
  }

  // ---------------------------------------------------------------------------- helpers

  async #listPod(uid: string, signal: AbortSignal): Promise<PodRuntimeView> {
    const selector = { labelSelector: { [LABEL_POD_UID]: uid } };
    const [sandboxes, containers] = await Promise.all([this.#client.listPodSandbox(selector, { signal }), this.#client.listContainers(selector, { signal })]);
    return { sandboxes, containers };
  }

  /**
   * The pod's runtime objects as the status cache last relisted them: at least as new as the status
   * the engine handed over, which came from that cache. Undefined without a cache, when the relist
   * is older than the kubelet's relist period, or when it did not see the pod (then a relist
   * started after this call is waited for: one serves every pod killed meanwhile, where a listing
   * by label per pod made 100 pods killed together 200 listing calls queued before their stops).
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

  /**
   * Runs one pod's stop calls, counted among the pods stopping; when the last of them ends, the
   * relist their checks were deferred to starts at once (so the last pod's check never waits).
   */
  async #stopping(stop: () => Promise<void>): Promise<void> {
    this.#podsStopping += 1;
    try {
      await stop();
    } finally {
      this.#podsStopping -= 1;
      if (this.#podsStopping === 0) this.#cache?.relistDeferredNow();
    }
  }

  /** Whether other pods' stop calls are in flight here (the status cache defers its relists meanwhile). */
  get stopsInFlight(): boolean {
    return this.#podsStopping > 0;
  }

  /**
   * The check after a pod's stops: a relist started after them. While other pods' stops are in
   * flight it is the cache's deferred relist, shared by every check that ends meanwhile (at most a
   * relist period later, as the kubelet's PLEG sees a stopped pod); the last pod's starts at once.
   */
  async #listPodAfterStops(uid: string, signal: AbortSignal): Promise<PodRuntimeView> {
    if (!this.#cache || this.#podsStopping === 0) return this.#listPodFresh(uid, signal);
    await this.#cache.relistSoon(signal);
    const pod = this.#cache.pod(uid);
    return pod ? viewOfRuntimePod(pod) : { containers: [], sandboxes: [] };
  }

  /** Lists the pod again (after its stops: `afterStops`) and throws when any of its containers still runs. */
  async #verifyStopped(uid: string, signal: AbortSignal, afterStops = false): Promise<PodRuntimeView> {
    const view = afterStops ? await this.#listPodAfterStops(uid, signal) : await this.#listPodFresh(uid, signal);
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
  async #reportFinalStatus(uid: string, view: PodRuntimeView, podStatusFn: (s: V1PodStatus) => void, signal: AbortSignal): Promise<void> {
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
   * Makes sure a relist stamped at or after this call's return comes, without starting a second one:
   * the engine stamps the end of a sync right after it returns, and its next phase (the terminated
   * sync) asks at once for a status newer than that stamp, which starts a relist before this
   * callback runs; that relist serves here too. Only when nothing asked for one by the next turn of
   * the event loop (a runtime-only pod has no next phase) does this start it, so the cache's readers
   * see the pod's end. One relist, not one each: on containerd tearing the sandbox down, every
   * listing answers slowly and delays the exit.
   */
  #refreshCacheAfterReturn(uid: string): void {
    const cache = this.#cache;
    // while other pods' stops are in flight, the next phase's wait shares the deferred relist
    if (!cache || this.#podsStopping > 0) return;
    const returnedAt = this.#clock.now();
    setImmediate(() => void cache.getNewerThan(uid, returnedAt).catch(() => undefined));
  }
}
