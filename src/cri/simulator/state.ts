/**
 * The simulated runtime: sandboxes and containers, their states, and the grace timing of stops.
 *
 * This is the model behind the simulator's gRPC server; it knows nothing of gRPC. It behaves like
 * containerd's CRI plugin where podctl can tell the difference:
 * - StopContainer(timeout) sends SIGTERM, then SIGKILLs (exit 137) when `timeout` seconds pass; the
 *   call returns once the container has exited (containers.ts).
 * - StopPodSandbox SIGKILLs every container of the sandbox at once, then marks it NOTREADY.
 * - RemoveContainer/RemovePodSandbox force-kill what still runs; removing an unknown ID succeeds.
 *   Stop/status of an unknown ID is NotFound.
 * - A container's SIGTERM behaviour and its injected process faults (stuck, vanished) are
 *   process.ts's.
 * This file owns the sandboxes, the journal and the timers, and is the one door to the model: the
 * containers (containers.ts) are reached through it.
 * Invariants: every timer the model starts is tracked and cleared by `close()`; a container exits
 * exactly once; events are emitted synchronously after each state change; nothing is created after
 * `close()`.
 */
import { ContainerConfig as ContainerConfigMessage, PodSandboxConfig as PodSandboxConfigMessage } from '../client/generated/runtime_v1.js';
import type {
  Container,
  ContainerConfig,
  ContainerEventResponse,
  DeepPartial,
  ContainerFilter,
  ContainerStatus,
  PodSandbox,
  PodSandboxConfig,
  PodSandboxFilter,
  PodSandboxStatus,
} from '../client/generated/runtime_v1.js';
import { ContainerEventCode, SandboxStateCode } from '../client/codes.js';
import { GrpcStatus } from '../client/errors.js';
import { matchesLabels, nanos, newId, SimContainers } from './containers.js';
import type { ProcessMode } from './process.js';
import { SimError, type CriMethod, type SimClock, type SimRecord } from './types.js';

interface SimSandbox {
  id: string;
  config: PodSandboxConfig;
  state: number;
  createdAtMs: number;
  runtimeHandler: string;
}

export interface SimRuntimeOptions {
  clock?: SimClock;
  /** Real-time factor for every simulated wait (0.1 = ten times faster). Default 1. */
  timeScale?: number;
  /** Maximum journal length (oldest entries dropped). Default 10_000. */
  journalLimit?: number;
}

export class SimRuntime {
  #clock: SimClock;
  #timeScale: number;
  #sandboxes = new Map<string, SimSandbox>();
  #containers: SimContainers;
  #timers = new Set<NodeJS.Timeout>();
  #journal: SimRecord[] = [];
  #journalLimit: number;
  #closed = false;

  constructor(options: SimRuntimeOptions = {}) {
    this.#clock = options.clock ?? { now: () => Date.now() };
    this.#timeScale = options.timeScale ?? 1;
    this.#journalLimit = options.journalLimit ?? 10_000;
    this.#containers = new SimContainers({
      now: () => this.#clock.now(),
      scaledMs: (seconds) => this.scaledMs(seconds),
      setTimer: (fn, ms) => this.#setTimer(fn, ms),
      clearTimer: (t) => this.#clearTimer(t),
      record: (entry) => this.record(entry),
      sandboxStatus: (id) => this.sandbox(id),
    });
  }

  get timeScale(): number {
    return this.#timeScale;
  }

  /** Real milliseconds a simulated wait of `seconds` takes. */
  scaledMs(seconds: number): number {
    return Math.max(0, seconds * 1000 * this.#timeScale);
  }

  // ------------------------------------------------------------------------------ inspection

  /** What happened, oldest first (RPCs, signals, exits, execs, injected faults). */
  journal(): readonly SimRecord[] {
    return this.#journal;
  }

  record(entry: SimRecord): void {
    this.#journal.push(entry);
    if (this.#journal.length > this.#journalLimit) this.#journal.splice(0, this.#journal.length - this.#journalLimit);
  }

  recordRpc(method: CriMethod, id?: string, detail?: string): void {
    this.record({ at: this.#clock.now(), kind: 'rpc', method, ...(id ? { id } : {}), ...(detail ? { detail } : {}) });
  }

  sandboxIds(): string[] {
    return [...this.#sandboxes.keys()];
  }

  containerIds(sandboxId?: string): string[] {
    return this.#containers.ids(sandboxId);
  }

  /** StopContainer calls still waiting for their container (each holds a kill timer). */
  pendingStops(): number {
    return this.#containers.pendingStops();
  }

  /** Timers the model holds (kill timers, graceful exits, exec sleeps). */
  pendingTimers(): number {
    return this.#timers.size;
  }

  /** A container's state as the CRI reports it (undefined when removed). */
  container(id: string): ContainerStatus | undefined {
    return this.#containers.find(id);
  }

  /** A sandbox's status (undefined when removed). */
  sandbox(id: string): PodSandboxStatus | undefined {
    return this.#sandboxes.has(id) ? this.podSandboxStatus(id) : undefined;
  }

  /**
   * Subscribes to container events (created/started/stopped/deleted), and to a sandbox's stop and
   * removal as containerd sends them (the sandbox's id as the container's; no status once removed).
   */
  subscribe(listener: (event: ContainerEventResponse) => void): () => void {
    return this.#containers.subscribe(listener);
  }

  /**
   * Sets the process mode of every container named `name` (existing ones that still run, and
   * those created later).
   */
  setProcessMode(name: string, mode: ProcessMode): void {
    this.#containers.setProcessMode(name, mode);
  }

  /** What ContainerStatus(verbose) adds: the pid and the process state, as JSON under "info". */
  containerInfo(id: string): Record<string, string> {
    return this.#containers.containerInfo(id);
  }

  // -------------------------------------------------------------------------------- sandboxes

  runPodSandbox(partial: DeepPartial<PodSandboxConfig>, runtimeHandler = ''): string {
    this.#assertOpen();
    const config = PodSandboxConfigMessage.fromPartial(partial as PodSandboxConfig);
    if (!config.metadata?.uid || !config.metadata.name) {
      throw new SimError(GrpcStatus.INVALID_ARGUMENT, 'sandbox config metadata (name, uid) is required');
    }
    const id = newId();
    this.#sandboxes.set(id, { id, config, state: SandboxStateCode.READY, createdAtMs: this.#clock.now(), runtimeHandler });
    return id;
  }

  stopPodSandbox(id: string): void {
    const sb = this.#sandbox(id);
    this.#containers.killAllIn(id);
    if (sb.state === SandboxStateCode.NOTREADY) return;
    sb.state = SandboxStateCode.NOTREADY;
    this.#containers.emitSandboxEvent(id, ContainerEventCode.STOPPED, this.podSandboxStatus(id));
  }

  removePodSandbox(id: string): void {
    if (!this.#sandboxes.has(id)) return;
    this.#containers.removeAllIn(id);
    this.#sandboxes.delete(id);
    this.#containers.emitSandboxEvent(id, ContainerEventCode.DELETED, undefined);
  }

  podSandboxStatus(id: string): PodSandboxStatus {
    const sb = this.#sandbox(id);
    return {
      id: sb.id,
      metadata: sb.config.metadata,
      state: sb.state,
      createdAt: nanos(sb.createdAtMs),
      network: sb.config.linux?.securityContext?.namespaceOptions?.network === 2 ? undefined : { ip: '127.0.0.1', additionalIps: [] },
      labels: { ...sb.config.labels },
      annotations: { ...sb.config.annotations },
      runtimeHandler: sb.runtimeHandler,
    };
  }

  listPodSandbox(filter: PodSandboxFilter | undefined): PodSandbox[] {
    const out: PodSandbox[] = [];
    for (const sb of this.#sandboxes.values()) {
      if (filter?.id && !sb.id.startsWith(filter.id)) continue;
      if (filter?.state && filter.state.state !== sb.state) continue;
      if (!matchesLabels(sb.config.labels, filter?.labelSelector)) continue;
      out.push({
        id: sb.id,
        metadata: sb.config.metadata,
        state: sb.state,
        createdAt: nanos(sb.createdAtMs),
        labels: { ...sb.config.labels },
        annotations: { ...sb.config.annotations },
        runtimeHandler: sb.runtimeHandler,
      });
    }
    return out;
  }

  // ------------------------------------------------------------------------------- containers

  createContainer(sandboxId: string, partial: DeepPartial<ContainerConfig>): string {
    this.#assertOpen();
    const config = ContainerConfigMessage.fromPartial(partial as ContainerConfig);
    const sb = this.#sandbox(sandboxId);
    if (sb.state !== SandboxStateCode.READY) {
      throw new SimError(GrpcStatus.FAILED_PRECONDITION, `sandbox ${sandboxId} is not ready`);
    }
    return this.#containers.createContainer(sandboxId, config);
  }

  startContainer(id: string): void {
    this.#containers.startContainer(id);
  }

  /** Marks a container exited without a stop (seeding: a container that already finished). */
  markExited(id: string, exitCode: number): void {
    this.#containers.markExited(id, exitCode);
  }

  /**
   * SIGTERM now, SIGKILL after `timeoutSeconds`; resolves when the container has exited. When
   * `signal` aborts (the client went away), this call's kill timer is dropped and it rejects.
   */
  stopContainer(id: string, timeoutSeconds: number, signal?: AbortSignal): Promise<void> {
    return this.#containers.stopContainer(id, timeoutSeconds, signal);
  }

  removeContainer(id: string): void {
    this.#containers.removeContainer(id);
  }

  containerStatus(id: string): ContainerStatus {
    return this.#containers.containerStatus(id);
  }

  listContainers(filter: ContainerFilter | undefined): Container[] {
    return this.#containers.listContainers(filter);
  }

  /**
   * Runs a command "in" a running container. Understood: `sleep N`, `true`, `false`, `exit N`,
   * `echo ...`, and `sh -c "<one of those>"`; anything else exits 127. A `timeoutSeconds` > 0
   * that passes first fails with DeadlineExceeded; the container exiting ends it with 137.
   */
  execSync(id: string, cmd: string[], timeoutSeconds: number, signal?: AbortSignal): Promise<{ stdout: string; stderr: string; exitCode: number }> {
    return this.#containers.execSync(id, cmd, timeoutSeconds, signal);
  }

  /** Stops every timer and releases every waiter; the model is unusable afterwards. */
  close(): void {
    this.#closed = true;
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    this.#containers.close();
  }

  // --------------------------------------------------------------------------------- helpers

  #sandbox(id: string): SimSandbox {
    const sb = this.#sandboxes.get(id);
    if (!sb) throw new SimError(GrpcStatus.NOT_FOUND, `an error occurred when try to find sandbox "${id}": not found`);
    return sb;
  }

  #setTimer(fn: () => void, ms: number): NodeJS.Timeout {
    const t = setTimeout(() => {
      this.#timers.delete(t);
      fn();
    }, ms);
    this.#timers.add(t);
    return t;
  }

  #clearTimer(t: NodeJS.Timeout | undefined): void {
    if (!t) return;
    clearTimeout(t);
    this.#timers.delete(t);
  }

  #assertOpen(): void {
    if (this.#closed) throw new SimError(GrpcStatus.UNAVAILABLE, 'simulator is shutting down');
  }
}
