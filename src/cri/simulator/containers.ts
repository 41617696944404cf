/**
 * The simulated runtime's containers: their records, their lifecycle (create, start, stop, exit,
 * remove), exec, and the container events, as containerd's CRI plugin shows them to podctl.
 * - StopContainer(timeout) sends SIGTERM, then SIGKILLs (exit 137) when `timeout` seconds pass; the
 *   call returns once the container has exited. Each call owns its kill timer: a second call with a
 *   shorter timeout kills earlier (ending the first call too); a call cancelled by its client drops
 *   its timer (containerd stops waiting and does not kill).
 * - RemoveContainer force-kills what still runs; removing an unknown ID succeeds; stop and status
 *   of an unknown ID are NotFound.
 * - A container's SIGTERM behaviour and its injected process faults are process.ts's.
 * Invariants: a container exits exactly once (its exit clears its graceful-exit and kill timers and
 * releases every waiter); every timer is the host's (so `SimRuntime.close()` clears it); events are
 * emitted synchronously after each state change.
 */
import { randomBytes } from 'node:crypto';
import type { Container, ContainerConfig, ContainerEventResponse, ContainerFilter, ContainerStatus, PodSandboxStatus } from '../client/generated/runtime_v1.js';
import { ContainerEventCode, ContainerStateCode } from '../client/codes.js';
import { GrpcStatus } from '../client/errors.js';
import { behaviourOf, processModeOf, SIM_PID_BASE, staleShimError, type ProcessMode } from './process.js';
import { SimError, type SigtermBehaviour, type SimRecord } from './types.js';

/** What the containers need of the runtime around them: its clock, its timers, its journal, its sandboxes. */
export interface ContainerHost {
  now(): number;
  /** Real milliseconds a simulated wait of `seconds` takes. */
  scaledMs(seconds: number): number;
  /** A timer the runtime tracks (cleared by its `close()`). */
  setTimer(fn: () => void, ms: number): NodeJS.Timeout;
  clearTimer(t: NodeJS.Timeout | undefined): void;
  record(entry: SimRecord): void;
  /** A sandbox's status for a container event (undefined when removed). */
  sandboxStatus(id: string): PodSandboxStatus | undefined;
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

/** A runtime object ID as containerd makes them: 64 hex digits. */
export function newId(): string {
  return randomBytes(32).toString('hex');
}

/** Epoch ms as CRI's nanoseconds (0 when unset). */
export function nanos(ms: number | undefined): bigint {
  return ms === undefined ? 0n : BigInt(Math.round(ms)) * 1_000_000n;
}

/** Whether labels match a CRI label selector (every key equal; no selector matches all). */
export function matchesLabels(labels: Record<string, string>, selector: Record<string, string> | undefined): boolean {
  if (!selector) return true;
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

export class SimContainers {
  #host: ContainerHost;
  #containers = new Map<string, SimContainer>();
  #listeners = new Set<(event: ContainerEventResponse) => void>();
  #pidSeq = 0;
  /** Process modes set by container name (simulator --fault container:NAME=MODE). */
  #processModes = new Map<string, ProcessMode>();

  constructor(host: ContainerHost) {
    this.#host = host;
  }

  /** The IDs of every container, or of one sandbox's. */
  ids(sandboxId?: string): string[] {
    return [...this.#containers.values()].filter((c) => !sandboxId || c.sandboxId === sandboxId).map((c) => c.id);
  }

  /** StopContainer calls still waiting for their container (each holds a kill timer). */
  pendingStops(): number {
    let n = 0;
    for (const c of this.#containers.values()) n += c.stopRequests.size;
    return n;
  }

  /** A container's state as the CRI reports it (undefined when removed). */
  find(id: string): ContainerStatus | undefined {
    const c = this.#containers.get(id);
    return c ? this.#statusOf(c) : undefined;
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

  /** Creates a container in a sandbox the caller found ready (its config already decoded). */
  createContainer(sandboxId: string, config: ContainerConfig): string {
    if (!config.metadata?.name) throw new SimError(GrpcStatus.INVALID_ARGUMENT, 'container metadata name is required');
    const id = newId();
    const c: SimContainer = {
      id,
      sandboxId,
      config,
      state: ContainerStateCode.CREATED,
      behaviour: behaviourOf(config),
      createdAtMs: this.#host.now(),
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
    c.startedAtMs = this.#host.now();
    this.#emit(c, ContainerEventCode.STARTED);
  }

  /** Marks a container exited without a stop (seeding: a container that already finished). */
  markExited(id: string, exitCode: number): void {
    const c = this.#container(id);
    if (c.state === ContainerStateCode.CREATED) {
      c.state = ContainerStateCode.RUNNING;
      c.startedAtMs = this.#host.now();
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
        this.#host.clearTimer(req.timer);
        c.stopRequests.delete(req);
        c.exitWaiters.delete(onExit);
        reject(new SimError(GrpcStatus.CANCELLED, 'stop cancelled by the client'));
      };
      req.timer = this.#host.setTimer(() => {
        c.stopRequests.delete(req);
        if (c.state === ContainerStateCode.RUNNING) this.#kill(c);
      }, this.#host.scaledMs(timeoutSeconds));
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
   * What StopPodSandbox does to the sandbox's containers: SIGKILL every running one at once (a
   * vanished process fails the stop first, as containerd's closed shim connection does).
   */
  killAllIn(sandboxId: string): void {
    for (const c of this.#containers.values()) {
      if (c.sandboxId === sandboxId && c.state === ContainerStateCode.RUNNING && c.process === 'vanished') throw staleShimError(c.id, 'stop container');
    }
    for (const c of this.#containers.values()) {
      if (c.sandboxId === sandboxId && c.state === ContainerStateCode.RUNNING) this.#kill(c);
    }
  }

  /** What RemovePodSandbox does to the sandbox's containers: removes each (force-killing what runs). */
  removeAllIn(sandboxId: string): void {
    for (const c of [...this.#containers.values()]) {
      if (c.sandboxId === sandboxId) this.removeContainer(c.id);
    }
  }

  /**
   * Runs a command "in" a running container. Understood: `sleep N`, `true`, `false`, `exit N`,
   * `echo ...`, and `sh -c "<one of those>"`; anything else exits 127. A `timeoutSeconds` > 0
   * that passes first fails with DeadlineExceeded; the container exiting ends it with 137.
   */
  async execSync(id: string, cmd: string[], timeoutSeconds: number, signal?: AbortSignal): Promise<{ stdout: string; stderr: string; exitCode: number }> {
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
    this.#host.record({ at: this.#host.now(), kind: 'exec', id, cmd, exitCode: result.exitCode });
    return result;
  }

  #execSleep(c: SimContainer, seconds: number, timeoutSeconds: number, signal?: AbortSignal): Promise<{ stdout: string; stderr: string; exitCode: number }> {
    return new Promise((resolve, reject) => {
      const timers: NodeJS.Timeout[] = [];
      const finish = (): void => {
        for (const t of timers) this.#host.clearTimer(t);
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
        this.#host.setTimer(() => {
          finish();
          resolve({ stdout: '', stderr: '', exitCode: 0 });
        }, this.#host.scaledMs(seconds)),
      );
      if (timeoutSeconds > 0 && timeoutSeconds < seconds) {
        timers.push(
          this.#host.setTimer(() => {
            finish();
            reject(new SimError(GrpcStatus.DEADLINE_EXCEEDED, `command timed out after ${timeoutSeconds}s`));
          }, this.#host.scaledMs(timeoutSeconds)),
        );
      }
      c.exitWaiters.add(onContainerExit);
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Releases every waiter and listener (the runtime has cleared every timer). */
  close(): void {
    this.#listeners.clear();
    for (const c of this.#containers.values()) {
      for (const w of [...c.exitWaiters]) w();
      c.exitWaiters.clear();
      c.stopRequests.clear();
    }
  }

  // --------------------------------------------------------------------------- transitions

  #sigterm(c: SimContainer): void {
    this.#host.record({ at: this.#host.now(), kind: 'signal', id: c.id, signal: 'SIGTERM' });
    if (c.process !== 'normal') return; // a stuck process does not take signals; a vanished one is gone
    if (c.sigtermAtMs !== undefined) return; // only the first SIGTERM starts a behaviour
    c.sigtermAtMs = this.#host.now();
    const b = c.behaviour;
    if (b === 'exit') this.#exit(c, 0);
    else if (b !== 'ignore') {
      c.gracefulExitTimer = this.#host.setTimer(() => {
        if (c.state === ContainerStateCode.RUNNING) this.#exit(c, 0);
      }, this.#host.scaledMs(b.exitAfterSeconds));
    }
  }

  #kill(c: SimContainer): void {
    this.#host.record({ at: this.#host.now(), kind: 'signal', id: c.id, signal: 'SIGKILL' });
    if (c.process === 'stuck') return; // SIGKILL cannot help until the I/O returns
    this.#exit(c, 137);
  }

  #exit(c: SimContainer, exitCode: number): void {
    if (c.state !== ContainerStateCode.RUNNING) return;
    c.state = ContainerStateCode.EXITED;
    c.finishedAtMs = this.#host.now();
    c.exitCode = exitCode;
    c.reason = exitCode === 0 ? 'Completed' : 'Error';
    this.#host.clearTimer(c.gracefulExitTimer);
    for (const req of c.stopRequests) this.#host.clearTimer(req.timer);
    c.stopRequests.clear();
    this.#host.record({ at: c.finishedAtMs, kind: 'exit', id: c.id, exitCode });
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

  /**
   * A sandbox's own event, as containerd sends it: the sandbox's id as the container id, its status
   * (none once removed) and its containers' statuses.
   */
  emitSandboxEvent(sandboxId: string, type: number, status: PodSandboxStatus | undefined): void {
    if (this.#listeners.size === 0) return;
    const event: ContainerEventResponse = {
      containerId: sandboxId,
      containerEventType: type,
      createdAt: nanos(this.#host.now()),
      podSandboxStatus: status,
      containersStatuses: [...this.#containers.values()].filter((c) => c.sandboxId === sandboxId).map((c) => this.#statusOf(c)),
    };
    for (const l of this.#listeners) l(event);
  }

  #emit(c: SimContainer, type: number): void {
    if (this.#listeners.size === 0) return;
    const event: ContainerEventResponse = {
      containerId: c.id,
      containerEventType: type,
      createdAt: nanos(this.#host.now()),
      podSandboxStatus: this.#host.sandboxStatus(c.sandboxId),
      containersStatuses: [this.#statusOf(c)],
    };
    for (const l of this.#listeners) l(event);
  }

  #container(id: string): SimContainer {
    const c = this.#containers.get(id);
    if (!c) throw new SimError(GrpcStatus.NOT_FOUND, `an error occurred when try to find container "${id}": not found`);
    return c;
  }
}
