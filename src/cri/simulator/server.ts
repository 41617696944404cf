/**
 * The embedded CRI simulator's gRPC server: the RuntimeService of `proto/runtime_v1.proto` on a
 * unix socket, backed by the SimRuntime model.
 *
 * Invariants:
 * - It is a real grpc-js server: clients talk to it exactly as to containerd (same proto, same
 *   socket transport), so everything tested against it exercises the real client code.
 * - Every handler first consults the fault injector (delay, then error; `proceed` runs the
 *   operation before the error); a client cancel or deadline aborts the handler's wait.
 * - `close()` stops the model's timers, ends event streams, shuts the server down and unlinks the
 *   socket; it is idempotent.
 * - A stale socket file (nothing serving it) is replaced; a live one is an error.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { handleServerStreamingCall, handleUnaryCall } from '@grpc/grpc-js';
import type { RuntimeServiceServer } from './grpc-service.js';
import { checkSocket } from '../client/endpoint.js';
import { GrpcStatus } from '../client/errors.js';
import { FaultInjector } from './faults.js';
import { seedPods, demoNode } from './seed.js';
import { SimRuntime } from './state.js';
import { sleep } from '../../lib/abortable.js';
import { SimError, type CriMethod, type FaultRule, type SimClock, type SimPodSpec } from './types.js';

const cancelled = (): SimError => new SimError(GrpcStatus.CANCELLED, 'cancelled');

export interface StartSimulatorOptions {
  socketPath: string;
  /** Pods to create at start, or a number of demo pods (see `demoNode`). */
  pods?: SimPodSpec[] | number;
  faults?: FaultRule[];
  clock?: SimClock;
  /** Real-time factor for simulated waits (0.1 = ten times faster). Default 1. */
  timeScale?: number;
  /** Serve GetContainerEvents (default true); false answers Unimplemented, as containerd 1.6 does. */
  events?: boolean;
  /** Random source for fault probabilities (tests). */
  random?: () => number;
}

export interface RunningSimulator {
  socketPath: string;
  /** `unix:///…` */
  endpoint: string;
  state: SimRuntime;
  faults: FaultInjector;
  /** Replaces the fault rules. */
  setFaults(rules: FaultRule[]): void;
  close(): Promise<void>;
}

function toStatus(err: unknown): { code: number; details: string } {
  if (err instanceof SimError) return { code: err.code, details: err.message };
  return { code: GrpcStatus.UNKNOWN, details: err instanceof Error ? err.message : String(err) };
}

/** Wraps a model operation as a unary handler: journal, faults, cancel, status mapping. */
type Unary = <Req, Res>(
  method: CriMethod,
  idOf: (req: Req) => string | undefined,
  op: (req: Req, signal: AbortSignal) => Res | Promise<Res>,
  detailOf?: (req: Req) => string,
) => handleUnaryCall<Req, Res>;

/** Runs `op` as the fault injector decides: its delay, then its error (`proceed`: the operation first). */
async function withFault<Res>(state: SimRuntime, faults: FaultInjector, method: CriMethod, run: () => Res | Promise<Res>, signal: AbortSignal): Promise<Res> {
  const fault = faults.decide(method);
  if (!fault) return run();
  state.record({ at: Date.now(), kind: 'fault', method, ...(fault.code !== undefined ? { code: fault.code } : {}), delayMs: fault.delayMs });
  const res = fault.proceed ? await run() : undefined;
  if (fault.delayMs > 0) await sleep(fault.delayMs, signal, { reason: cancelled });
  if (fault.code !== undefined) throw new SimError(fault.code, fault.details);
  return fault.proceed ? (res as Res) : run();
}

/** The unary handlers' wrapper over one model and fault injector. */
function unaryOver(state: SimRuntime, faults: FaultInjector): Unary {
  return (method, idOf, op, detailOf) => (call, callback) => {
    const ac = new AbortController();
    call.on('cancelled', () => ac.abort());
    state.recordRpc(method, idOf(call.request), detailOf?.(call.request));
    withFault(state, faults, method, () => op(call.request, ac.signal), ac.signal).then(
      (res) => callback(null, res),
      (err: unknown) => callback(toStatus(err)),
    );
  };
}

/** GetContainerEvents: the model's events, until the client cancels or the simulator closes (`streams`). */
function eventsHandler(state: SimRuntime, faults: FaultInjector, streams: Set<{ end(): void }>): handleServerStreamingCall<unknown, unknown> {
  return (call) => {
    state.recordRpc('GetContainerEvents');
    const fault = faults.decide('GetContainerEvents');
    if (fault?.code !== undefined) {
      call.emit('error', { code: fault.code, details: fault.details });
      return;
    }
    const unsubscribe = state.subscribe((event) => call.write(event));
    const entry = {
      end: () => {
        unsubscribe();
        call.end();
      },
    };
    streams.add(entry);
    call.on('cancelled', () => {
      unsubscribe();
      streams.delete(entry);
    });
  };
}

/** The runtime's version and pod sandbox calls. */
function sandboxHandlers(state: SimRuntime, unary: Unary): Partial<RuntimeServiceServer> {
  return {
    version: unary(
      'Version',
      () => undefined,
      () => ({
        version: '0.1.0',
        runtimeName: 'podctl-simulator',
        runtimeVersion: '0.1.0',
        runtimeApiVersion: 'v1',
      }),
    ),
    runPodSandbox: unary(
      'RunPodSandbox',
      (r) => r.config?.metadata?.uid,
      (r) => ({
        podSandboxId: state.runPodSandbox(r.config ?? {}, r.runtimeHandler),
      }),
    ),
    stopPodSandbox: unary(
      'StopPodSandbox',
      (r) => r.podSandboxId,
      (r) => {
        state.stopPodSandbox(r.podSandboxId);
        return {};
      },
    ),
    removePodSandbox: unary(
      'RemovePodSandbox',
      (r) => r.podSandboxId,
      (r) => {
        state.removePodSandbox(r.podSandboxId);
        return {};
      },
    ),
    podSandboxStatus: unary(
      'PodSandboxStatus',
      (r) => r.podSandboxId,
      (r) => ({
        status: state.podSandboxStatus(r.podSandboxId),
        info: {},
        containersStatuses: [],
        timestamp: 0n,
      }),
    ),
    listPodSandbox: unary(
      'ListPodSandbox',
      () => undefined,
      (r) => ({ items: state.listPodSandbox(r.filter) }),
    ),
  };
}

/** The container calls. */
function containerHandlers(state: SimRuntime, unary: Unary): Partial<RuntimeServiceServer> {
  return {
    createContainer: unary(
      'CreateContainer',
      (r) => r.podSandboxId,
      (r) => ({
        containerId: state.createContainer(r.podSandboxId, r.config ?? {}),
      }),
    ),
    startContainer: unary(
      'StartContainer',
      (r) => r.containerId,
      (r) => {
        state.startContainer(r.containerId);
        return {};
      },
    ),
    stopContainer: unary(
      'StopContainer',
      (r) => r.containerId,
      async (r, signal) => {
        await state.stopContainer(r.containerId, Number(r.timeout), signal);
        return {};
      },
      (r) => `timeout=${r.timeout}`,
    ),
    removeContainer: unary(
      'RemoveContainer',
      (r) => r.containerId,
      (r) => {
        state.removeContainer(r.containerId);
        return {};
      },
    ),
    listContainers: unary(
      'ListContainers',
      () => undefined,
      (r) => ({ containers: state.listContainers(r.filter) }),
    ),
    containerStatus: unary(
      'ContainerStatus',
      (r) => r.containerId,
      (r) => ({
        status: state.containerStatus(r.containerId),
        info: r.verbose ? state.containerInfo(r.containerId) : {},
      }),
    ),
    execSync: unary(
      'ExecSync',
      (r) => r.containerId,
      async (r, signal) => {
        const res = await state.execSync(r.containerId, r.cmd, Number(r.timeout), signal);
        return { stdout: Buffer.from(res.stdout), stderr: Buffer.from(res.stderr), exitCode: res.exitCode };
      },
      (r) => `timeout=${r.timeout} cmd=${JSON.stringify(r.cmd)}`,
    ),
  };
}

/** Frees `socketPath` for the server: a live socket is an error, a stale one is removed, any other file kept (an error). */
async function claimSocket(socketPath: string): Promise<void> {
  await fs.mkdir(path.dirname(socketPath), { recursive: true });
  const existing = await checkSocket(socketPath, 300);
  if (existing.ok) throw new Error(`simulator socket ${socketPath} is already being served`);
  if (existing.reason !== 'missing') {
    // only a stale socket is replaced: anything else at that path is someone's file
    const found = await fs.lstat(socketPath).catch(() => undefined);
    if (found && !found.isSocket()) throw new Error(`simulator socket ${socketPath} exists and is not a socket`);
    await fs.rm(socketPath, { force: true });
  }
}

/** Ends the event streams, stops the model, shuts the server down (forced after 500 ms) and unlinks the socket. */
async function shutDown(server: { tryShutdown(cb: () => void): void; forceShutdown(): void }, state: SimRuntime, streams: Set<{ end(): void }>, socketPath: string): Promise<void> {
  for (const s of streams) s.end();
  streams.clear();
  state.close();
  await new Promise<void>((resolve) => {
    const force = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, 500);
    server.tryShutdown(() => {
      clearTimeout(force);
      resolve();
    });
  });
  await fs.rm(socketPath, { force: true });
}

/** Starts a simulator serving on `socketPath`. */
export async function startSimulator(options: StartSimulatorOptions): Promise<RunningSimulator> {
  const socketPath = path.resolve(options.socketPath);
  const { grpc, runtimeService } = await import('./grpc-service.js');
  const state = new SimRuntime({
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.timeScale !== undefined ? { timeScale: options.timeScale } : {}),
  });
  const faults = new FaultInjector(options.faults ?? [], options.random);
  const streams = new Set<{ end(): void }>();
  const unary = unaryOver(state, faults);
  const impl: Partial<RuntimeServiceServer> = { ...sandboxHandlers(state, unary), ...containerHandlers(state, unary) };
  if (options.events !== false) impl.getContainerEvents = eventsHandler(state, faults, streams);

  await claimSocket(socketPath);
  const server = new grpc.Server({ 'grpc.max_receive_message_length': 16 * 1024 * 1024 });
  server.addService(runtimeService, impl);
  await new Promise<void>((resolve, reject) => {
    server.bindAsync(`unix://${socketPath}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve()));
  });

  if (options.pods !== undefined) {
    const specs = typeof options.pods === 'number' ? demoNode(options.pods) : options.pods;
    seedPods(state, specs);
  }

  let closing: Promise<void> | undefined;
  return {
    socketPath,
    endpoint: `unix://${socketPath}`,
    state,
    faults,
    setFaults: (rules) => faults.set(rules),
    close() {
      closing ??= shutDown(server, state, streams, socketPath);
      return closing;
    },
  };
}
