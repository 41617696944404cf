/**
 * Which CRI socket podctl talks to.
 *
 * Order (first match wins):
 *   1. the `--runtime-endpoint` value (the caller passes it as `flag`);
 *   2. the CONTAINER_RUNTIME_ENDPOINT environment variable;
 *   3. crictl's configuration file (`runtime-endpoint:` in /etc/crictl.yaml, or the file
 *      $PODCTL_CRICTL_CONFIG or crictl's $CRI_CONFIG_FILE names), as crictl reads it — an
 *      operator's crictl setup is podctl's;
 *   4. the well-known sockets, in turn: containerd, CRI-O, cri-dockerd;
 *   5. the embedded simulator's socket `<stateDir>/simulator.sock`, if a simulator is serving it.
 *
 * It also settles the deadline of each CRI request: the caller's (`--request-timeout`, `--timeout`
 * where a command has none of its own, or $PODCTL_REQUEST_TIMEOUT), else crictl's `timeout:` (whole
 * seconds) from the same file, else DEFAULT_RPC_TIMEOUT_MS; 0 or less means the default, as for
 * crictl. When none of these sets it, the sandbox teardown calls (StopPodSandbox, RemovePodSandbox)
 * get SANDBOX_TEARDOWN_TIMEOUT_MS instead (`teardownTimeoutMs`): a deadline that was set applies to
 * every call. Connecting (the runtime's HTTP/2 answer) is bounded by the smaller of that and
 * CONNECT_TIMEOUT_MS.
 *
 * Invariants:
 * - An endpoint that was asked for explicitly (1, 2 or 3) is never silently replaced by another: if it
 *   is missing or not accessible, resolution fails with one clear line naming the path and the flag.
 * - A well-known socket that exists but cannot be opened (permission) is reported, not skipped: a
 *   node that has containerd but a user without access must not end up on the simulator.
 * - Probing a socket is a bounded connect (no gRPC import), files are read and stat'ed with callback
 *   fs (lib/fs-async.ts, not fs.promises, whose internals load a dozen of Node's modules): this module
 *   stays cheap to load and to run.
 * - With `keepConnection`, the probe's connection to the socket resolved is not closed but handed to
 *   the caller (`ResolvedEndpoint.connection`, unref'ed, its errors kept until the caller listens):
 *   the runtime is connected to once, not twice. The caller uses it or destroys it.
 */
import { constants as fsConstants } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import * as fs from '../../lib/fs-async.js';
import { silenceBound } from '../../lib/silence-bound.js';

export const CONTAINERD_SOCKET = '/run/containerd/containerd.sock';
export const CRIO_SOCKET = '/var/run/crio/crio.sock';
export const CRI_DOCKERD_SOCKET = '/var/run/cri-dockerd.sock';
export const WELL_KNOWN_SOCKETS: readonly string[] = [CONTAINERD_SOCKET, CRIO_SOCKET, CRI_DOCKERD_SOCKET];
export const SIMULATOR_SOCKET_NAME = 'simulator.sock';
export const ENDPOINT_ENV = 'CONTAINER_RUNTIME_ENDPOINT';
export const ENDPOINT_FLAG = '--runtime-endpoint';
export const CRICTL_CONFIG = '/etc/crictl.yaml';
export const CRICTL_CONFIG_ENV = 'PODCTL_CRICTL_CONFIG';
/** crictl's own variable for its configuration file (`crictl --config`). */
export const CRI_CONFIG_FILE_ENV = 'CRI_CONFIG_FILE';
/** Deadline of each CRI request when nothing sets one, ms. */
export const DEFAULT_RPC_TIMEOUT_MS = 10_000;
/**
 * Deadline of StopPodSandbox and RemovePodSandbox when nothing sets one, ms: the kubelet's
 * --runtime-request-timeout default (2m). A loaded runtime's network teardown can take over a
 * minute, and a call cut short is retried from the start.
 */
export const SANDBOX_TEARDOWN_TIMEOUT_MS = 120_000;
/** Bound for the runtime to answer a new connection as an HTTP/2 (gRPC) server, ms. */
export const CONNECT_TIMEOUT_MS = 2_000;
/** Where a request deadline came from (debug output, error hints). */
export type TimeoutSource = 'flag' | 'crictl' | 'default';

/** The keys podctl reads from a crictl configuration file. */
export interface CrictlConfig {
  runtimeEndpoint?: string;
  /** crictl's `timeout:`, whole seconds; 0 or less (crictl: the default) is left out. */
  timeoutSeconds?: number;
}

/** The crictl configuration file podctl reads: $PODCTL_CRICTL_CONFIG, $CRI_CONFIG_FILE, /etc/crictl.yaml. */
export function crictlConfigPath(env: NodeJS.ProcessEnv = process.env): string {
  return env[CRICTL_CONFIG_ENV] || env[CRI_CONFIG_FILE_ENV] || CRICTL_CONFIG;
}

/**
 * The keys podctl uses from a crictl configuration file (crictl's YAML is flat `key: value` lines;
 * read without a YAML parser to keep this module cheap); nothing when the file is not there. A
 * `timeout` that is not a whole number of seconds is an EndpointError naming the file (crictl
 * refuses such a file too).
 */
export async function readCrictlConfig(file: string): Promise<CrictlConfig> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch {
    return {};
  }
  const config: CrictlConfig = {};
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    const endpoint = /^runtime-endpoint\s*:\s*["']?([^"'#\s]+)["']?\s*(#.*)?$/.exec(line);
    if (endpoint?.[1] && config.runtimeEndpoint === undefined) config.runtimeEndpoint = endpoint[1];
    const timeout = /^timeout\s*:\s*(.*?)\s*(#.*)?$/.exec(line);
    if (timeout && !('timeoutSeconds' in config)) {
      const value = (timeout[1] ?? '').replace(/^(["'])(.*)\1$/, '$2');
      if (value === '') continue;
      if (!/^-?\d+$/.test(value)) {
        throw new EndpointError(`timeout in ${file}: "${value}" is not a whole number of seconds (crictl's timeout: 2 is 2s); fix it, or pass --request-timeout`, 'invalid');
      }
      const seconds = Number(value);
      if (seconds > 0) config.timeoutSeconds = seconds;
    }
  }
  return config;
}

export interface ResolvedEndpoint {
  /** gRPC target, `unix:///abs/path`. */
  endpoint: string;
  /** Filesystem path of the socket. */
  path: string;
  /** True when this is the embedded simulator's socket. */
  simulated: boolean;
  /** What named the socket: `--runtime-endpoint`, the variable, the crictl file, or a default. */
  source: string;
  /** Deadline of each CRI request, ms, and where it came from. */
  timeoutMs: number;
  timeoutSource: TimeoutSource;
  /** Deadline of StopPodSandbox and RemovePodSandbox, ms: `timeoutMs` when one was set, else SANDBOX_TEARDOWN_TIMEOUT_MS. */
  teardownTimeoutMs: number;
  /** The crictl file read (named in messages), whether or not it exists. */
  crictlFile: string;
  /** With `keepConnection`: the probe's connection to `path`, for the caller to use or destroy. */
  connection?: net.Socket;
}

export interface ResolveEndpointOptions {
  /** The `--runtime-endpoint` value, if given. */
  flag?: string;
  /** Environment to read CONTAINER_RUNTIME_ENDPOINT from (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** podctl's state directory: where the simulator's socket lives. */
  stateDir?: string;
  /** Override the well-known socket list (tests). */
  wellKnown?: readonly string[];
  /** Bound for each connect probe, ms (default 500). */
  probeTimeoutMs?: number;
  /** Hand the probe's connection to the endpoint resolved to the caller instead of closing it. */
  keepConnection?: boolean;
  /** The request deadline asked for on the command line or its variable, ms (0: none asked for). */
  requestTimeoutMs?: number;
  signal?: AbortSignal;
}

/** Resolution failed; `message` is one line naming the path and the flag. */
export class EndpointError extends Error {
  override readonly name = 'EndpointError';
  readonly path: string | undefined;
  readonly reason: 'invalid' | 'missing' | 'not-a-socket' | 'permission' | 'refused' | 'none' | 'not-cri';
  constructor(message: string, reason: EndpointError['reason'], socketPath?: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.reason = reason;
    this.path = socketPath;
  }
}

/**
 * Parses an endpoint as given by a user: `unix:///path`, `unix:/path`, `unix://path` or a plain
 * absolute path. Other schemes (tcp, npipe) are refused: podctl speaks CRI on unix sockets only.
 */
export function parseEndpoint(value: string): { endpoint: string; path: string } {
  const raw = value.trim();
  let p: string;
  if (raw.startsWith('unix://')) p = raw.slice('unix://'.length);
  else if (raw.startsWith('unix:')) p = raw.slice('unix:'.length);
  else if (/^[a-z][a-z0-9+.-]*:\/\//i.test(raw)) {
    throw new EndpointError(`unsupported runtime endpoint "${value}": only unix sockets are supported (${ENDPOINT_FLAG} unix:///path/to/cri.sock)`, 'invalid');
  } else p = raw;
  if (!p || !path.isAbsolute(p)) {
    throw new EndpointError(`invalid runtime endpoint "${value}": expected an absolute socket path (${ENDPOINT_FLAG} unix:///path/to/cri.sock)`, 'invalid');
  }
  const normalized = path.normalize(p);
  return { endpoint: `unix://${normalized}`, path: normalized };
}

type SocketCheck = { ok: true; connection?: net.Socket } | { ok: false; reason: 'missing' | 'not-a-socket' | 'permission' | 'refused'; detail: string };

/**
 * Stat + bounded connect: is something serving this unix socket, and may we open it? With `keep`,
 * the connection made is returned open (unref'ed; an error on it is swallowed until the caller
 * adds its own listener, which then sees the socket destroyed) instead of closed.
 */
export async function checkSocket(socketPath: string, timeoutMs = 500, signal?: AbortSignal, keep = false): Promise<SocketCheck> {
  let st;
  try {
    st = await fs.stat(socketPath);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EACCES' || code === 'EPERM') return { ok: false, reason: 'permission', detail: 'permission denied' };
    return { ok: false, reason: 'missing', detail: 'no such socket' };
  }
  if (!st.isSocket()) return { ok: false, reason: 'not-a-socket', detail: 'not a unix socket' };
  try {
    await fs.access(socketPath, fsConstants.R_OK | fsConstants.W_OK);
  } catch {
    return { ok: false, reason: 'permission', detail: 'permission denied' };
  }
  return connectProbe(socketPath, timeoutMs, signal, keep);
}

function connectProbe(socketPath: string, timeoutMs: number, signal: AbortSignal | undefined, keep: boolean): Promise<SocketCheck> {
  return new Promise((resolve) => {
    const sock = net.createConnection({ path: socketPath });
    const done = (result: SocketCheck): void => {
      silence.stop();
      signal?.removeEventListener('abort', onAbort);
      sock.removeAllListeners('connect').removeAllListeners('error');
      if (result.ok && keep) sock.on('error', () => undefined).unref();
      else sock.destroy();
      resolve(result.ok && keep ? { ok: true, connection: sock } : result);
    };
    const onAbort = (): void => done({ ok: false, reason: 'refused', detail: 'aborted' });
    const silence = silenceBound(timeoutMs, () => done({ ok: false, reason: 'refused', detail: `no answer within ${timeoutMs} ms` }));
    signal?.addEventListener('abort', onAbort, { once: true });
    sock.once('connect', () => done({ ok: true }));
    sock.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EACCES' || err.code === 'EPERM') done({ ok: false, reason: 'permission', detail: 'permission denied' });
      else if (err.code === 'ENOENT') done({ ok: false, reason: 'missing', detail: 'no such socket' });
      else done({ ok: false, reason: 'refused', detail: `nothing is serving it (${err.code ?? err.message})` });
    });
  });
}

function failure(socketPath: string, check: Exclude<SocketCheck, { ok: true }>, source: string): EndpointError {
  const hint = check.reason === 'permission' ? `run podctl as a user that may open it, or pass ${ENDPOINT_FLAG}` : `is the runtime running? pass ${ENDPOINT_FLAG} unix:///path/to/cri.sock`;
  return new EndpointError(`runtime endpoint ${socketPath} (${source}): ${check.detail}; ${hint}`, check.reason, socketPath);
}

/** The connection a successful check kept, as ResolvedEndpoint's field. */
function kept(check: { ok: true; connection?: net.Socket }): Pick<ResolvedEndpoint, 'connection'> {
  return check.connection ? { connection: check.connection } : {};
}

/** Picks the CRI endpoint (see the module comment for the order). */
export async function resolveEndpoint(options: ResolveEndpointOptions = {}): Promise<ResolvedEndpoint> {
  const env = options.env ?? process.env;
  const probeMs = options.probeTimeoutMs ?? 500;
  const keep = options.keepConnection ?? false;
  const simulatorPath = options.stateDir ? path.join(options.stateDir, SIMULATOR_SOCKET_NAME) : undefined;

  const crictlFile = crictlConfigPath(env);
  const asked = options.requestTimeoutMs !== undefined && options.requestTimeoutMs > 0 ? options.requestTimeoutMs : undefined;
  const endpointGiven = Boolean(options.flag || env[ENDPOINT_ENV]);
  // crictl's file is read when it can decide something: the socket or the request deadline
  const crictl = endpointGiven && asked !== undefined ? {} : await readCrictlConfig(crictlFile);
  const fromCrictl = endpointGiven ? undefined : crictl.runtimeEndpoint;
  const timeout: Pick<ResolvedEndpoint, 'timeoutMs' | 'timeoutSource' | 'teardownTimeoutMs' | 'crictlFile'> =
    asked !== undefined
      ? { timeoutMs: asked, timeoutSource: 'flag', teardownTimeoutMs: asked, crictlFile }
      : crictl.timeoutSeconds !== undefined
        ? { timeoutMs: crictl.timeoutSeconds * 1000, timeoutSource: 'crictl', teardownTimeoutMs: crictl.timeoutSeconds * 1000, crictlFile }
        : { timeoutMs: DEFAULT_RPC_TIMEOUT_MS, timeoutSource: 'default', teardownTimeoutMs: SANDBOX_TEARDOWN_TIMEOUT_MS, crictlFile };
  const explicit =
    options.flag !== undefined && options.flag !== ''
      ? { value: options.flag, source: ENDPOINT_FLAG }
      : env[ENDPOINT_ENV]
        ? { value: env[ENDPOINT_ENV], source: ENDPOINT_ENV }
        : fromCrictl !== undefined
          ? { value: fromCrictl, source: `runtime-endpoint in ${crictlFile}` }
          : undefined;
  if (explicit) {
    const parsed = parseEndpoint(explicit.value);
    const check = await checkSocket(parsed.path, probeMs, options.signal, keep);
    if (!check.ok) throw failure(parsed.path, check, explicit.source);
    return { ...parsed, simulated: simulatorPath !== undefined && parsed.path === path.normalize(simulatorPath), source: explicit.source, ...timeout, ...kept(check) };
  }

  for (const candidate of options.wellKnown ?? WELL_KNOWN_SOCKETS) {
    const check = await checkSocket(candidate, probeMs, options.signal, keep);
    if (check.ok) return { ...parseEndpoint(candidate), simulated: false, source: 'default socket', ...timeout, ...kept(check) };
    if (check.reason === 'permission') throw failure(candidate, check, 'default socket');
  }

  if (simulatorPath) {
    const check = await checkSocket(simulatorPath, probeMs, options.signal, keep);
    if (check.ok) return { ...parseEndpoint(simulatorPath), simulated: true, source: "the simulator's default socket", ...timeout, ...kept(check) };
  }

  const tried = [...(options.wellKnown ?? WELL_KNOWN_SOCKETS), ...(simulatorPath ? [simulatorPath] : [])];
  throw new EndpointError(`no container runtime found (tried ${tried.join(', ')}); pass ${ENDPOINT_FLAG} unix:///path/to/cri.sock or start \`podctl simulator\``, 'none');
}

/** The connect bound for a request deadline: CONNECT_TIMEOUT_MS, or the deadline when it is shorter. */
export function connectTimeoutFor(timeoutMs: number): number {
  return Math.min(CONNECT_TIMEOUT_MS, timeoutMs);
}

/**
 * The one line for a socket that accepted the connection but did not answer as a gRPC (CRI)
 * server within `connectMs`: it names the endpoint, where it came from and `--runtime-endpoint`.
 */
export function notCriError(resolved: Pick<ResolvedEndpoint, 'endpoint' | 'path' | 'source'>, connectMs: number, cause?: unknown): EndpointError {
  const within = connectMs % 1000 === 0 ? `${connectMs / 1000}s` : `${connectMs}ms`;
  const check =
    resolved.source === ENDPOINT_FLAG
      ? `is ${ENDPOINT_FLAG} right?`
      : resolved.source === ENDPOINT_ENV || resolved.source.startsWith('runtime-endpoint in ')
        ? `is ${resolved.source.startsWith('runtime-endpoint in ') ? resolved.source : `$${ENDPOINT_ENV}`} right? ${ENDPOINT_FLAG} overrides it`
        : `it is the ${resolved.source}; pass ${ENDPOINT_FLAG} for another`;
  return new EndpointError(`the runtime at ${resolved.endpoint} did not answer as a CRI runtime within ${within} (${check})`, 'not-cri', resolved.path, cause);
}
