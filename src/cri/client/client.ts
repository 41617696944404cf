/**
 * The CRI v1 RuntimeService client over a unix socket: unary calls on one HTTP/2 connection
 * (channel.ts), the container event stream on its own (event-stream.ts), both in gRPC's wire format;
 * messages encoded and decoded by the generated module.
 *
 * Owns one HTTP/2 connection for its unary calls (a new one after the runtime restarted), and one
 * per event stream. Invariants:
 * - Every unary call has a deadline (default 10 s, per-client `timeoutMs`, per-call override;
 *   StopPodSandbox and RemovePodSandbox the per-client `teardownTimeoutMs`, default `timeoutMs`) and
 *   honours an AbortSignal: an abort cancels the in-flight RPC and rejects with `signal.reason`.
 * - Calls that ask the runtime to wait (StopContainer's timeout, ExecSync's timeout) get that wait
 *   added to their deadline, as the kubelet does, so a long grace period is not cut short by the
 *   RPC deadline.
 * - Every other failure rejects with a CriError(method, code, details); a deadline that passed says
 *   how long was waited ("no answer within 10s").
 * - `waitForReady` is the connect bound: it ends when the runtime has answered the connection as an
 *   HTTP/2 server (its SETTINGS frame), so a socket that accepts and never speaks, or speaks
 *   something else, is told apart from a slow runtime.
 * - An event stream ends quietly when its signal aborts, and with CriError Cancelled when the client
 *   is closed; a closed client opens none.
 * - Loading this module costs nothing beyond itself: the generated protobuf module is imported on
 *   `connectCri()`, not at module load. grpc-js is not loaded at all.
 */
import type {
  Container,
  ContainerConfig,
  ContainerFilter,
  ContainerStatusResponse,
  DeepPartial,
  ExecSyncResponse,
  PodSandbox,
  PodSandboxConfig,
  PodSandboxFilter,
  MessageFns,
  PodSandboxStatusResponse,
  VersionResponse,
} from './generated/runtime_v1.js';
import type net from 'node:net';
import type { ContainerEventSummary } from './container-event.js';
import { Http2Channel } from './channel.js';
import { CriError, GrpcStatus } from './errors.js';
import { DEFAULT_RPC_TIMEOUT_MS, parseEndpoint } from './endpoint.js';
import { openContainerEventStream } from './event-stream.js';
import { clampTimerMs } from '../../engine/timers.js';
import { sleep } from '../../lib/abortable.js';

export type { Container, PodSandbox } from './generated/runtime_v1.js';

/** Pauses before the retries of a call that ended UNAVAILABLE (see #unary). */
const UNAVAILABLE_RETRY_MS: readonly number[] = [50, 200, 500, 1000];

/** One finished CRI call, for metrics: the CRI method name, its duration and whether it failed. */
export interface RuntimeOperation {
  method: string;
  ms: number;
  error: boolean;
}

const operationObservers = new Set<(op: RuntimeOperation) => void>();

/**
 * Observes every unary CRI call of every client in this process (the agent's and the one-shot
 * commands' runtime-operation metrics); returns the function that stops observing. An observer that
 * throws is ignored: metrics never break a call.
 */
export function observeRuntimeOperations(observer: (op: RuntimeOperation) => void): () => void {
  operationObservers.add(observer);
  return () => operationObservers.delete(observer);
}

function reportOperation(method: string, started: number, error: boolean): void {
  if (operationObservers.size === 0) return;
  const op = { method, ms: Date.now() - started, error };
  for (const observer of operationObservers) {
    try {
      observer(op);
    } catch {
      // a metric lost is better than a failed call
    }
  }
}

/** 2s, 1.5s, 300ms: how long a deadline was, for messages. */
function formatMs(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))}ms`;
  const s = Math.round(ms / 100) / 10;
  return `${s}s`;
}

interface CallOptions {
  signal?: AbortSignal;
  /** Deadline for this call, ms (default: the client's timeoutMs). */
  timeoutMs?: number;
}

export interface CriClientOptions {
  /** `unix:///path` or an absolute socket path. */
  endpoint: string;
  /** Default deadline for each call, ms (default 10_000). */
  timeoutMs?: number;
  /** Default deadline of StopPodSandbox and RemovePodSandbox, ms (default: `timeoutMs`). */
  teardownTimeoutMs?: number;
  /** A connection to the endpoint already made (ResolvedEndpoint.connection): the client owns it. */
  connection?: net.Socket;
}

interface ExecResult {
  stdout: string;
  stderr: string;
  exitCode: number;
}

export interface CriClient {
  readonly endpoint: string;
  readonly timeoutMs: number;
  version(options?: CallOptions): Promise<VersionResponse>;
  runPodSandbox(config: DeepPartial<PodSandboxConfig>, options?: CallOptions & { runtimeHandler?: string }): Promise<string>;
  stopPodSandbox(podSandboxId: string, options?: CallOptions): Promise<void>;
  removePodSandbox(podSandboxId: string, options?: CallOptions): Promise<void>;
  podSandboxStatus(podSandboxId: string, options?: CallOptions & { verbose?: boolean }): Promise<PodSandboxStatusResponse>;
  listPodSandbox(filter?: DeepPartial<PodSandboxFilter>, options?: CallOptions): Promise<PodSandbox[]>;
  createContainer(podSandboxId: string, config: DeepPartial<ContainerConfig>, sandboxConfig: DeepPartial<PodSandboxConfig>, options?: CallOptions): Promise<string>;
  startContainer(containerId: string, options?: CallOptions): Promise<void>;
  /** Stop signal, then SIGKILL after `timeoutSeconds` (0 = at once). Deadline = timeout + call deadline. */
  stopContainer(containerId: string, timeoutSeconds: number, options?: CallOptions): Promise<void>;
  removeContainer(containerId: string, options?: CallOptions): Promise<void>;
  listContainers(filter?: DeepPartial<ContainerFilter>, options?: CallOptions): Promise<Container[]>;
  containerStatus(containerId: string, options?: CallOptions & { verbose?: boolean }): Promise<ContainerStatusResponse>;
  /** Runs `cmd` in the container; `timeoutSeconds` 0 = no runtime limit (the call deadline still applies). */
  execSync(containerId: string, cmd: string[], timeoutSeconds: number, options?: CallOptions): Promise<ExecResult>;
  /**
   * The runtime's container event stream, each event read only as far as the container, the kind
   * of event and the pod (container-event.ts). Ends quietly when `signal` aborts; throws a CriError
   * when the stream fails (Unimplemented on runtimes without events, Unavailable when the runtime goes).
   */
  containerEvents(signal: AbortSignal): AsyncIterable<ContainerEventSummary>;
  /**
   * Connects (if not connected) and resolves once the runtime has answered as an HTTP/2 (gRPC)
   * server; rejects with CriError('Connect', DeadlineExceeded) when it has not within `timeoutMs`,
   * or with `signal.reason` on abort. No RPC is made.
   */
  waitForReady(timeoutMs: number, signal?: AbortSignal): Promise<void>;
  /** Closes the channel; in-flight calls fail with Cancelled/Unavailable. */
  close(): void;
}

type ProtoModule = typeof import('./generated/runtime_v1.js');

type EventDecoder = (bytes: Uint8Array) => ContainerEventSummary;

/** What the lazily loaded module gives the client: messages, the event decoder, the responses' reader, the listings' decoders. */
interface CriModules {
  proto: ProtoModule;
  decodeEvent: EventDecoder;
  Reader: typeof import('./reader.js').BufferReader;
  listDecoders: Readonly<Record<string, (bytes: Buffer) => unknown>>;
}

let modules: Promise<CriModules> | undefined;

/** Loads the generated module once (the only heavy import of the CRI client). */
export function loadCriModules(): Promise<CriModules> {
  modules ??= import('./grpc-modules.js').then(({ proto, decodeContainerEventSummary, BufferReader, listDecoders }) => ({
    proto,
    decodeEvent: decodeContainerEventSummary,
    Reader: BufferReader,
    listDecoders,
  }));
  return modules;
}

/** Largest message sent or received: 16 MiB, as the kubelet's CRI client allows. */
const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

/** Opens a client (lazily loading the generated module). No RPC is made, nothing is connected: a dead socket shows on the first call. */
export async function connectCri(options: CriClientOptions): Promise<CriClient> {
  const { endpoint, path } = parseEndpoint(options.endpoint);
  const timeoutMs = options.timeoutMs ?? DEFAULT_RPC_TIMEOUT_MS;
  const at = { endpoint, socketPath: path, timeoutMs, teardownTimeoutMs: options.teardownTimeoutMs ?? timeoutMs, ...(options.connection ? { connection: options.connection } : {}) };
  const modules = await loadCriModules().catch((error: unknown) => {
    options.connection?.destroy();
    throw error;
  });
  return new Http2CriClient(at, modules);
}

/** A unary method of the generated service definition: its name and message types. */
interface UnaryMethod<Req, Res> {
  readonly name: string;
  readonly requestType: MessageFns<Req>;
  readonly responseType: MessageFns<Res>;
}

class Http2CriClient implements CriClient {
  readonly endpoint: string;
  readonly timeoutMs: number;
  #channel: Http2Channel;
  #proto: ProtoModule;
  #methods: ProtoModule['RuntimeServiceDefinition']['methods'];
  /** `/runtime.v1.RuntimeService/`: each method's path follows it. */
  #servicePath: string;
  #decodeEvent: EventDecoder;
  #Reader: CriModules['Reader'];
  #listDecoders: CriModules['listDecoders'];
  #closed = false;
  readonly #socketPath: string;
  readonly #teardownTimeoutMs: number;
  /** Ends each event stream in flight (`close()`). */
  readonly #streams = new Set<() => void>();

  constructor(at: { endpoint: string; socketPath: string; timeoutMs: number; teardownTimeoutMs: number; connection?: net.Socket }, { proto, decodeEvent, Reader, listDecoders }: CriModules) {
    this.endpoint = at.endpoint;
    this.#socketPath = at.socketPath;
    this.timeoutMs = at.timeoutMs;
    this.#teardownTimeoutMs = at.teardownTimeoutMs;
    this.#channel = new Http2Channel({ socketPath: at.socketPath, maxMessageBytes: MAX_MESSAGE_BYTES, ...(at.connection ? { connection: at.connection } : {}) });
    this.#proto = proto;
    this.#methods = proto.RuntimeServiceDefinition.methods;
    this.#servicePath = `/${proto.RuntimeServiceDefinition.fullName}/`;
    this.#decodeEvent = decodeEvent;
    this.#Reader = Reader;
    this.#listDecoders = listDecoders;
  }

  /**
   * One unary RPC with a deadline, an abort hook and CriError mapping. UNAVAILABLE (the call did not
   * reach the runtime: a dropped connection, a restarting runtime) is retried within the same deadline
   * after 50, 200, 500 and 1000 ms — five attempts, the most gRPC's own retry policy allows: a flaky
   * socket costs a pod at most 1.75 s, not the engine's 10 s back-off (with a tenth of calls failing,
   * one in 100,000 calls still ends UNAVAILABLE; with two retries it was one in 1,000, and a 24-pod
   * drain makes ~210 calls). Other errors are the engine's to retry.
   */
  async #unary<Req, Res>(method: UnaryMethod<Req, Res>, request: Req, options: CallOptions | undefined, extraMs = 0): Promise<Res> {
    const signal = options?.signal;
    if (signal?.aborted) throw signal.reason;
    if (this.#closed) throw new CriError(method.name, GrpcStatus.CANCELLED, 'client closed');
    // a wait as long as a grace period may pass what a timer accepts: clamped (timers.ts)
    const boundMs = clampTimerMs((options?.timeoutMs ?? this.timeoutMs) + extraMs);
    const deadline = Date.now() + boundMs;
    const message = method.requestType.encode(request).finish();
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await this.#attempt(method, message, signal, deadline);
      } catch (error) {
        // the deadline passed here or at the runtime: say how long was waited
        if (error instanceof CriError && error.code === GrpcStatus.DEADLINE_EXCEEDED && /^Deadline exceeded/i.test(error.details)) {
          throw new CriError(method.name, error.code, `no answer within ${formatMs(boundMs)}`, { cause: error });
        }
        const pauseMs = UNAVAILABLE_RETRY_MS[attempt];
        const retry = pauseMs !== undefined && error instanceof CriError && error.code === GrpcStatus.UNAVAILABLE && !this.#closed && Date.now() + pauseMs < deadline;
        if (!retry) throw error;
        await sleep(pauseMs, signal);
      }
    }
  }

  async #attempt<Req, Res>(method: UnaryMethod<Req, Res>, message: Uint8Array, signal: AbortSignal | undefined, deadline: number): Promise<Res> {
    const started = Date.now();
    let bytes: Buffer;
    try {
      bytes = await this.#channel.unary(method.name, `${this.#servicePath}${method.name}`, message, deadline, signal);
    } catch (error) {
      if (error instanceof CriError) reportOperation(method.name, started, true);
      throw error;
    }
    reportOperation(method.name, started, false);
    try {
      // the listings in one pass (list-decode.ts: the same objects); else the generated decoder, which
      // reads from the reader it is given, nested messages included
      const decodeList = this.#listDecoders[method.name];
      return decodeList ? (decodeList(bytes) as Res) : method.responseType.decode(new this.#Reader(bytes));
    } catch (error) {
      throw new CriError(method.name, GrpcStatus.INTERNAL, `a response that cannot be read: ${(error as Error).message}`, { cause: error });
    }
  }

  version(options?: CallOptions): Promise<VersionResponse> {
    return this.#unary(this.#methods.version, this.#proto.VersionRequest.fromPartial({ version: 'v1' }), options);
  }

  async runPodSandbox(config: DeepPartial<PodSandboxConfig>, options?: CallOptions & { runtimeHandler?: string }): Promise<string> {
    const req = this.#proto.RunPodSandboxRequest.fromPartial({ config, runtimeHandler: options?.runtimeHandler ?? '' });
    const res = await this.#unary(this.#methods.runPodSandbox, req, options);
    return res.podSandboxId;
  }

  async stopPodSandbox(podSandboxId: string, options?: CallOptions): Promise<void> {
    await this.#unary(this.#methods.stopPodSandbox, { podSandboxId }, { ...options, timeoutMs: options?.timeoutMs ?? this.#teardownTimeoutMs });
  }

  async removePodSandbox(podSandboxId: string, options?: CallOptions): Promise<void> {
    await this.#unary(this.#methods.removePodSandbox, { podSandboxId }, { ...options, timeoutMs: options?.timeoutMs ?? this.#teardownTimeoutMs });
  }

  podSandboxStatus(podSandboxId: string, options?: CallOptions & { verbose?: boolean }): Promise<PodSandboxStatusResponse> {
    return this.#unary(this.#methods.podSandboxStatus, { podSandboxId, verbose: options?.verbose ?? false }, options);
  }

  async listPodSandbox(filter?: DeepPartial<PodSandboxFilter>, options?: CallOptions): Promise<PodSandbox[]> {
    const req = this.#proto.ListPodSandboxRequest.fromPartial({ filter });
    const res = await this.#unary(this.#methods.listPodSandbox, req, options);
    return res.items;
  }

  async createContainer(podSandboxId: string, config: DeepPartial<ContainerConfig>, sandboxConfig: DeepPartial<PodSandboxConfig>, options?: CallOptions): Promise<string> {
    const req = this.#proto.CreateContainerRequest.fromPartial({ podSandboxId, config, sandboxConfig });
    const res = await this.#unary(this.#methods.createContainer, req, options);
    return res.containerId;
  }

  async startContainer(containerId: string, options?: CallOptions): Promise<void> {
    await this.#unary(this.#methods.startContainer, { containerId }, options);
  }

  async stopContainer(containerId: string, timeoutSeconds: number, options?: CallOptions): Promise<void> {
    const timeout = Math.max(0, Math.ceil(timeoutSeconds));
    await this.#unary(this.#methods.stopContainer, { containerId, timeout: BigInt(timeout) }, options, timeout * 1000);
  }

  async removeContainer(containerId: string, options?: CallOptions): Promise<void> {
    await this.#unary(this.#methods.removeContainer, { containerId }, options);
  }

  async listContainers(filter?: DeepPartial<ContainerFilter>, options?: CallOptions): Promise<Container[]> {
    const req = this.#proto.ListContainersRequest.fromPartial({ filter });
    const res = await this.#unary(this.#methods.listContainers, req, options);
    return res.containers;
  }

  containerStatus(containerId: string, options?: CallOptions & { verbose?: boolean }): Promise<ContainerStatusResponse> {
    return this.#unary(this.#methods.containerStatus, { containerId, verbose: options?.verbose ?? false }, options);
  }

  async execSync(containerId: string, cmd: string[], timeoutSeconds: number, options?: CallOptions): Promise<ExecResult> {
    const timeout = Math.max(0, Math.ceil(timeoutSeconds));
    const res: ExecSyncResponse = await this.#unary(this.#methods.execSync, { containerId, cmd, timeout: BigInt(timeout) }, options, timeout * 1000);
    return { stdout: Buffer.from(res.stdout).toString('utf8'), stderr: Buffer.from(res.stderr).toString('utf8'), exitCode: res.exitCode };
  }

  async *containerEvents(signal: AbortSignal): AsyncIterable<ContainerEventSummary> {
    if (signal.aborted) return;
    if (this.#closed) throw new CriError('GetContainerEvents', GrpcStatus.CANCELLED, 'client closed');
    // read over HTTP/2 directly (event-stream.ts), each chunk's events at once; handed on in order
    let arrived: ContainerEventSummary[] = [];
    let ended = false;
    let failure: CriError | undefined;
    let wake: (() => void) | undefined;
    const notify = (): void => {
      const resume = wake;
      wake = undefined;
      resume?.();
    };
    const stop = new AbortController();
    const onAbort = (): void => stop.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    const cancel = (): void => {
      failure ??= new CriError('GetContainerEvents', GrpcStatus.CANCELLED, 'client closed');
      ended = true;
      stop.abort();
      notify();
    };
    this.#streams.add(cancel);
    openContainerEventStream({
      socketPath: this.#socketPath,
      decode: this.#decodeEvent,
      signal: stop.signal,
      onEvents: (events) => {
        if (arrived.length === 0) arrived = events;
        else for (const event of events) arrived.push(event);
        notify();
      },
      onEnd: (error) => {
        ended = true;
        failure ??= error;
        notify();
      },
    });
    try {
      for (;;) {
        const batch = arrived;
        arrived = [];
        for (const event of batch) yield event;
        if (arrived.length > 0) continue;
        if (failure !== undefined) throw failure;
        if (ended || signal.aborted) return;
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
      }
    } finally {
      this.#streams.delete(cancel);
      signal.removeEventListener('abort', onAbort);
      stop.abort();
    }
  }

  waitForReady(timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#closed) return Promise.reject(new CriError('Connect', GrpcStatus.CANCELLED, 'client closed'));
    return this.#channel.waitForReady(clampTimerMs(timeoutMs), formatMs(timeoutMs), signal);
  }

  close(): void {
    this.#closed = true;
    this.#channel.close();
    for (const cancel of [...this.#streams]) cancel();
  }
}
