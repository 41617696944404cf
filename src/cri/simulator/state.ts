/**
 * The simulated runtime: sandboxes and containers, their states, and the grace timing of stops.
 *
 * This is the model behind the simulator's gRPC server; it knows nothing of gRPC. It behaves like
 * containerd's CRI plugin where podctl can tell the difference:
 * - StopContainer(timeout) sends SIGTERM, then SIGKILLs (exit 137) when `timeout` seconds pass; the
 *   call returns once the container has exited. Each call owns its kill timer: a second call with a
 *   shorter timeout kills earlier (ending the first call too); a call cancelled by its client drops
 *   its timer (containerd stops waiting and does not kill).
 * - StopPodSandbox SIGKILLs every container of the sandbox at once, then marks it NOTREADY.
 * - RemoveContainer/RemovePodSandbox force-kill what still runs; removing an unknown ID succeeds.
 *   Stop/status of an unknown ID is NotFound.
 * - A container's SIGTERM behaviour comes from its command, read as the test image's /pause does
 *   (`/pause`, `/pause ignore`, `/pause graceful N`), or from its `podctl.io/sim-sigterm`
 *   annotation ('exit' | 'ignore' | seconds).
 * Invariants: every timer the model starts is tracked and cleared by `close()`; a container exits
 * exactly once; events are emitted synchronously after each state change.
 */
import { randomBytes } from 'node:crypto';
import { ContainerConfig as ContainerConfigMessage, PodSandboxConfig as PodSandboxConfigMessage } from '../generated/runtime_v1.js';
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
} from '../generated/runtime_v1.js';
import { ContainerEventCode, ContainerStateCode, SandboxStateCode } from '../codes.js';
import { GrpcStatus } from '../errors.js';
import type { CriMethod, SigtermBehaviour, SimClock, SimRecord } from './types.js';

export const ANN_SIM_SIGTERM = 'podctl.io/sim-sigterm';
/** A container's simulated process mode ('stuck' | 'vanished'), see ProcessMode. */
export const ANN_SIM_PROCESS = 'podctl.io/sim-process';
/** Above the kernel's largest pid_max (2^22): a simulated pid never names a real process. */
const SIM_PID_BASE = 4_194_400;

/** An error the server turns into a gRPC status. */
export class SimError extends Error {
  readonly code: number;
  constructor(code: number, details: string) {
    super(details);
    this.code = code;
  }
}

interface SimSandbox {
  id: string;
  config: PodSandboxConfig;
  state: number;
  createdAtMs: number;
  runtimeHandler: string;
}

interface StopRequest {
  timer: NodeJS.Timeout | undefined;
}

interface SimContainer {
  id: string;
  sandboxId: string;
  config: ContainerConfig;
  state: number;
  behaviour: SigtermBehaviour;
  createdAtMs: number;
  startedAtMs?: number;
  finishedAtMs?: number;
  exitCode: number;
  reason: string;
  sigtermAtMs?: number;
  gracefulExitTimer?: NodeJS.Timeout;
  stopRequests: Set<StopRequest>;
  exitWaiters: Set<() => void>;
  /** The simulated process: normal, stuck in uninterruptible sleep, or vanished under a stale shim. */
  process: ProcessMode;
  pid: number;
}

/**
 * The simulated container process, for producing stuck pods:
 * - normal: it follows its SIGTERM behaviour and dies on SIGKILL;
 * - stuck: in uninterruptible sleep (state D): no signal ends it, so StopContainer never returns
 *   (the client's deadline ends the call) and the sandbox stop cannot kill it;
 * - vanished: the process is gone but the runtime still reports it running (a stale shim):
 *   StopContainer and StopPodSandbox fail as containerd's do when the shim's connection is closed.
 * ContainerStatus(verbose) reports the pid and the process state ('S', 'D', or 'gone') in its
 * info, as containerd reports the pid.
 */
export type ProcessMode = 'normal' | 'stuck' | 'vanished';
export const PROCESS_MODES: readonly ProcessMode[] = ['normal', 'stuck', 'vanished'];

function processModeOf(config: Pick<ContainerConfig, 'annotations'>): ProcessMode {
  const ann = config.annotations?.[ANN_SIM_PROCESS];
  return ann === 'stuck' || ann === 'vanished' ? ann : 'normal';
}

function staleShimError(id: string, what: string): SimError {
  return new SimError(GrpcStatus.UNKNOWN, `failed to ${what} "${id}": ttrpc: closed: unknown`);
}

export interface SimRuntimeOptions {
  clock?: SimClock;
  /** Real-time factor for every simulated wait (0.1 = ten times faster). Default 1. */
  timeScale?: number;
  /** Maximum journal length (oldest entries dropped). Default 10_000. */
  journalLimit?: number;
}

/** Reads a SIGTERM behaviour from a container's annotations and command line. */
export function behaviourOf(config: Pick<ContainerConfig, 'command' | 'args' | 'annotations'>): SigtermBehaviour {
  const ann = config.annotations?.[ANN_SIM_SIGTERM];
  if (ann !== undefined) {
    if (ann === 'ignore') return 'ignore';
    if (ann === 'exit') return 'exit';
    const n = Number(ann);
    if (Number.isFinite(n) && n >= 0) return { exitAfterSeconds: n };
  }
  const argv = [...(config.command ?? []), ...(config.args ?? [])];
  const at = argv.findIndex((a) => a === 'pause' || a.endsWith('/pause'));
  const rest = at >= 0 ? argv.slice(at + 1) : argv;
  if (rest[0] === 'ignore') return 'ignore';
  if (rest[0] === 'graceful') {
    const n = Number(rest[1]);
    if (Number.isFinite(n) && n >= 0) return { exitAfterSeconds: n };
  }
  return 'exit';
}

function newId(): string {
  return randomBytes(32).toString('hex');
}

function nanos(ms: number | undefined): bigint {
  return ms === undefined ? 0n : BigInt(Math.round(ms)) * 1_000_000n;
}

function matchesLabels(labels: Record<string, string>, selector: Record<string, string> | undefined): boolean {
  if (!selector) return true;
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

export class SimRuntime {
  #clock: SimClock;
  #timeScale: number;
  #sandboxes = new Map<string, SimSandbox>();
  #containers = new Map<string, SimContainer>();
  #listeners = new Set<(event: ContainerEventResponse) => void>();
  #timers = new Set<NodeJS.Timeout>();
  #journal: SimRecord[] = [];
  #journalLimit: number;
  #closed = false;
  #pidSeq = 0;
  /** Process modes set by container name (simulator --fault container:NAME=MODE). */
  #processModes = new Map<string, ProcessMode>();

  constructor(options: SimRuntimeOptions = {}) {
    this.#clock = options.clock ?? { now: () => Date.now() };
    this.#timeScale = options.timeScale ?? 1;
    this.#journalLimit = options.journalLimit ?? 10_000;
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
    return [...this.#containers.values()].filter((c) => !sandboxId || c.sandboxId === sandboxId).map((c) => c.id);
  }

  /** StopContainer calls still waiting for their container (each holds a kill timer). */
  pendingStops(): number {
    let n = 0;
    for (const c of this.#containers.values()) n += c.stopRequests.size;
    return n;
  }

  /** Timers the model holds (kill timers, graceful exits, exec sleeps). */
  pendingTimers(): number {
    return this.#timers.size;
  }

  /** A container's state as the CRI reports it (undefined when removed). */
  container(id: string): ContainerStatus | undefined {
    const c = this.#containers.get(id);
    return c ? this.#statusOf(c) : undefined;
  }

  /** A sandbox's status (undefined when removed). */
  sandbox(id: string): PodSandboxStatus | undefined {
    return this.#sandboxes.has(id) ? this.podSandboxStatus(id) : undefined;
  }

  /** Subscribes to container events (created/started/stopped/deleted). */
  subscribe(listener: (event: ContainerEventResponse) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Sets the process mode of every container named `name` (existing ones that still run, and
   * those created later).
   */
  setProcessMode(name: string, mode: ProcessMode): void {
    this.#processModes.set(name, mode);
    for (const c of this.#containers.values()) {
      if (c.config.metadata?.name === name && c.state !== ContainerStateCode.EXITED) c.process = mode;
    }
  }

  /** What ContainerStatus(verbose) adds: the pid and the process state, as JSON under "info". */
  containerInfo(id: string): Record<string, string> {
    const c = this.#container(id);
    const running = c.state === ContainerStateCode.RUNNING;
    const processState = !running ? 'gone' : c.process === 'stuck' ? 'D' : c.process === 'vanished' ? 'gone' : 'S';
    return { info: JSON.stringify({ pid: running ? c.pid : 0, simProcessState: processState }) };
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
    for (const c of this.#containers.values()) {
      if (c.sandboxId === id && c.state === ContainerStateCode.RUNNING && c.process === 'vanished') throw staleShimError(c.id, 'stop container');
    }
    for (const c of this.#containers.values()) {
      if (c.sandboxId === id && c.state === ContainerStateCode.RUNNING) this.#kill(c);
    }
    sb.state = SandboxStateCode.NOTREADY;
  }

  removePodSandbox(id: string): void {
    if (!this.#sandboxes.has(id)) return;
    for (const c of [...this.#containers.values()]) {
      if (c.sandboxId === id) this.removeContainer(c.id);
    }
    this.#sandboxes.delete(id);
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
    if (!config.metadata?.name) throw new SimError(GrpcStatus.INVALID_ARGUMENT, 'container metadata name is required');
    const id = newId();
    const c: SimContainer = {
      id,
      sandboxId,
      config,
      state: ContainerStateCode.CREATED,
      behaviour: behaviourOf(config),
      createdAtMs: this.#clock.now(),
      exitCode: 0,
      reason: '',
      stopRequests: new Set(),
      exitWaiters: new Set(),
      process: this.#processModes.get(config.metadata.name) ?? processModeOf(config),
      pid: SIM_PID_BASE + ++this.#pidSeq,
    };
    this.#containers.set(id, c);
    this.#emit(c, ContainerEventCode.CREATED);
    return id;
  }

  startContainer(id: string): void {
    const c = this.#container(id);
    if (c.state !== ContainerStateCode.CREATED) {
      throw new SimError(GrpcStatus.FAILED_PRECONDITION, `container ${id} is not in created state`);
    }
    c.state = ContainerStateCode.RUNNING;
    c.startedAtMs = this.#clock.now();
    this.#emit(c, ContainerEventCode.STARTED);
  }

  /** Marks a container exited without a stop (seeding: a container that already finished). */
  markExited(id: string, exitCode: number): void {
    const c = this.#container(id);
    if (c.state === ContainerStateCode.CREATED) {
      c.state = ContainerStateCode.RUNNING;
      c.startedAtMs = this.#clock.now();
    }
    if (c.state === ContainerStateCode.RUNNING) this.#exit(c, exitCode);
  }

  /**
   * SIGTERM now, SIGKILL after `timeoutSeconds`; resolves when the container has exited. When
   * `signal` aborts (the client went away), this call's kill timer is dropped and it rejects.
   */
  stopContainer(id: string, timeoutSeconds: number, signal?: AbortSignal): Promise<void> {
    const c = this.#container(id);
    if (c.state !== ContainerStateCode.RUNNING) return Promise.resolve();
    if (c.process === 'vanished') return Promise.reject(staleShimError(c.id, 'stop container'));
    this.#sigterm(c);
    if (c.state !== ContainerStateCode.RUNNING) return Promise.resolve();
    if (timeoutSeconds <= 0 && c.process !== 'stuck') {
      this.#kill(c);
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const req: StopRequest = { timer: undefined };
      const onExit = (): void => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = (): void => {
        this.#clearTimer(req.timer);
        c.stopRequests.delete(req);
        c.exitWaiters.delete(onExit);
        reject(new SimError(GrpcStatus.CANCELLED, 'stop cancelled by the client'));
      };
      req.timer = this.#setTimer(() => {
        c.stopRequests.delete(req);
        if (c.state === ContainerStateCode.RUNNING) this.#kill(c);
      }, this.scaledMs(timeoutSeconds));
      c.stopRequests.add(req);
      c.exitWaiters.add(onExit);
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  removeContainer(id: string): void {
    const c = this.#containers.get(id);
    if (!c) return;
    if (c.state === ContainerStateCode.RUNNING) this.#kill(c);
    this.#containers.delete(id);
    this.#emit(c, ContainerEventCode.DELETED);
  }

  containerStatus(id: string): ContainerStatus {
    return this.#statusOf(this.#container(id));
  }

  listContainers(filter: ContainerFilter | undefined): Container[] {
    const out: Container[] = [];
    for (const c of this.#containers.values()) {
      if (filter?.id && !c.id.startsWith(filter.id)) continue;
      if (filter?.podSandboxId && !c.sandboxId.startsWith(filter.podSandboxId)) continue;
      if (filter?.state && filter.state.state !== c.state) continue;
      if (!matchesLabels(c.config.labels, filter?.labelSelector)) continue;
      out.push({
        id: c.id,
        podSandboxId: c.sandboxId,
        metadata: c.config.metadata,
        image: c.config.image,
        imageRef: c.config.image?.image ?? '',
        state: c.state,
        createdAt: nanos(c.createdAtMs),
        labels: { ...c.config.labels },
        annotations: { ...c.config.annotations },
        imageId: c.config.image?.image ?? '',
      });
    }
    return out;
  }

  /**
   * Runs a command "in" a running container. Understood: `sleep N`, `true`, `false`, `exit N`,
   * `echo ...`, and `sh -c "<one of those>"`; anything else exits 127. A `timeoutSeconds` > 0
   * that passes first fails with DeadlineExceeded; the container exiting ends it with 137.
   */
  async execSync(
    id: string,
    cmd: string[],
    timeoutSeconds: number,
    signal?: AbortSignal,
  ): Promise<{ stdout: string; stderr: string; exitCode: number }> {
    const c = this.#container(id);
    if (c.state !== ContainerStateCode.RUNNING) {
      throw new SimError(GrpcStatus.FAILED_PRECONDITION, `container ${id} is not running`);
    }
    let argv = cmd;
    if ((argv[0] === 'sh' || argv[0] === '/bin/sh') && argv[1] === '-c' && argv[2] !== undefined) {
      argv = argv[2].trim().split(/\s+/);
    }
    const prog = (argv[0] ?? '').split('/').pop() ?? '';
    let result: { stdout: string; stderr: string; exitCode: number };
    if (prog === 'sleep') {
      const seconds = Number(argv[1] ?? '0');
      result = await this.#execSleep(c, Number.isFinite(seconds) ? seconds : 0, timeoutSeconds, signal);
    } else if (prog === 'true') result = { stdout: '', stderr: '', exitCode: 0 };
    else if (prog === 'false') result = { stdout: '', stderr: '', exitCode: 1 };
    else if (prog === 'exit') result = { stdout: '', stderr: '', exitCode: Number(argv[1] ?? '0') | 0 };
    else if (prog === 'echo') result = { stdout: `${argv.slice(1).join(' ')}\n`, stderr: '', exitCode: 0 };
    else result = { stdout: '', stderr: `${argv[0] ?? ''}: not found\n`, exitCode: 127 };
    this.record({ at: this.#clock.now(), kind: 'exec', id, cmd, exitCode: result.exitCode });
    return result;
  }

  #execSleep(
    c: SimContainer,
    seconds: number,
    timeoutSeconds: number,
    signal?: AbortSignal,
  ): Promise<{ stdout: string; stderr: string; exitCode: number }> {
    return new Promise((resolve, reject) => {
      const timers: NodeJS.Timeout[] = [];
      const finish = (): void => {
        for (const t of timers) this.#clearTimer(t);
        c.exitWaiters.delete(onContainerExit);
        signal?.removeEventListener('abort', onAbort);
      };
      const onContainerExit = (): void => {
        finish();
        resolve({ stdout: '', stderr: '', exitCode: 137 });
      };
      const onAbort = (): void => {
        finish();
        reject(new SimError(GrpcStatus.CANCELLED, 'exec cancelled by the client'));
      };
      timers.push(
        this.#setTimer(() => {
          finish();
          resolve({ stdout: '', stderr: '', exitCode: 0 });
        }, this.scaledMs(seconds)),
      );
      if (timeoutSeconds > 0 && timeoutSeconds < seconds) {
        timers.push(
          this.#setTimer(() => {
            finish();
            reject(new SimError(GrpcStatus.DEADLINE_EXCEEDED, `command timed out after ${timeoutSeconds}s`));
          }, this.scaledMs(timeoutSeconds)),
        );
      }
      c.exitWaiters.add(onContainerExit);
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Stops every timer and releases every waiter; the model is unusable afterwards. */
  close(): void {
    this.#closed = true;
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    this.#listeners.clear();
    for (const c of this.#containers.values()) {
      for (const w of [...c.exitWaiters]) w();
      c.exitWaiters.clear();
      c.stopRequests.clear();
    }
  }

  // --------------------------------------------------------------------------- transitions

  #sigterm(c: SimContainer): void {
    this.record({ at: this.#clock.now(), kind: 'signal', id: c.id, signal: 'SIGTERM' });
    if (c.process !== 'normal') return; // a stuck process does not take signals; a vanished one is gone
    if (c.sigtermAtMs !== undefined) return; // only the first SIGTERM starts a behaviour
    c.sigtermAtMs = this.#clock.now();
    const b = c.behaviour;
    if (b === 'exit') this.#exit(c, 0);
    else if (b !== 'ignore') {
      c.gracefulExitTimer = this.#setTimer(() => {
        if (c.state === ContainerStateCode.RUNNING) this.#exit(c, 0);
      }, this.scaledMs(b.exitAfterSeconds));
    }
  }

  #kill(c: SimContainer): void {
    this.record({ at: this.#clock.now(), kind: 'signal', id: c.id, signal: 'SIGKILL' });
    if (c.process === 'stuck') return; // SIGKILL cannot help until the I/O returns
    this.#exit(c, 137);
  }

  #exit(c: SimContainer, exitCode: number): void {
    if (c.state !== ContainerStateCode.RUNNING) return;
    c.state = ContainerStateCode.EXITED;
    c.finishedAtMs = this.#clock.now();
    c.exitCode = exitCode;
    c.reason = exitCode === 0 ? 'Completed' : 'Error';
    this.#clearTimer(c.gracefulExitTimer);
    for (const req of c.stopRequests) this.#clearTimer(req.timer);
    c.stopRequests.clear();
    this.record({ at: c.finishedAtMs, kind: 'exit', id: c.id, exitCode });
    const waiters = [...c.exitWaiters];
    c.exitWaiters.clear();
    for (const w of waiters) w();
    this.#emit(c, ContainerEventCode.STOPPED);
  }

  // --------------------------------------------------------------------------------- helpers

  #statusOf(c: SimContainer): ContainerStatus {
    return {
      id: c.id,
      metadata: c.config.metadata,
      state: c.state,
      createdAt: nanos(c.createdAtMs),
      startedAt: nanos(c.startedAtMs),
      finishedAt: nanos(c.finishedAtMs),
      exitCode: c.exitCode,
      image: c.config.image,
      imageRef: c.config.image?.image ?? '',
      reason: c.reason,
      message: '',
      labels: { ...c.config.labels },
      annotations: { ...c.config.annotations },
      logPath: c.config.logPath,
      imageId: c.config.image?.image ?? '',
    };
  }

  #emit(c: SimContainer, type: number): void {
    if (this.#listeners.size === 0) return;
    const sb = this.#sandboxes.get(c.sandboxId);
    const event: ContainerEventResponse = {
      containerId: c.id,
      containerEventType: type,
      createdAt: nanos(this.#clock.now()),
      podSandboxStatus: sb ? this.podSandboxStatus(sb.id) : undefined,
      containersStatuses: [this.#statusOf(c)],
    };
    for (const l of this.#listeners) l(event);
  }

  #sandbox(id: string): SimSandbox {
    const sb = this.#sandboxes.get(id);
    if (!sb) throw new SimError(GrpcStatus.NOT_FOUND, `an error occurred when try to find sandbox "${id}": not found`);
    return sb;
  }

  #container(id: string): SimContainer {
    const c = this.#containers.get(id);
    if (!c) throw new SimError(GrpcStatus.NOT_FOUND, `an error occurred when try to find container "${id}": not found`);
    return c;
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
