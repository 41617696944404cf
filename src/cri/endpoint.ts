/**
 * Which CRI socket podctl talks to.
 *
 * Order (first match wins):
 *   1. the `--runtime-endpoint` value (the caller passes it as `flag`);
 *   2. the CONTAINER_RUNTIME_ENDPOINT environment variable;
 *   3. crictl's configuration file (`runtime-endpoint:` in /etc/crictl.yaml, or the file
 *      $PODCTL_CRICTL_CONFIG names), as crictl reads it — an operator's crictl setup is podctl's;
 *   4. the well-known sockets, in turn: containerd, CRI-O, cri-dockerd;
 *   5. the embedded simulator's socket `<stateDir>/simulator.sock`, if a simulator is serving it.
 *
 * Invariants:
 * - An endpoint that was asked for explicitly (1, 2 or 3) is never silently replaced by another: if it
 *   is missing or not accessible, resolution fails with one clear line naming the path and the flag.
 * - A well-known socket that exists but cannot be opened (permission) is reported, not skipped: a
 *   node that has containerd but a user without access must not end up on the simulator.
 * - Probing a socket is a bounded connect (no gRPC import): this module stays cheap to load.
 */
import { constants as fsConstants, promises as fs } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

export const CONTAINERD_SOCKET = '/run/containerd/containerd.sock';
export const CRIO_SOCKET = '/var/run/crio/crio.sock';
export const CRI_DOCKERD_SOCKET = '/var/run/cri-dockerd.sock';
export const WELL_KNOWN_SOCKETS: readonly string[] = [CONTAINERD_SOCKET, CRIO_SOCKET, CRI_DOCKERD_SOCKET];
export const SIMULATOR_SOCKET_NAME = 'simulator.sock';
export const ENDPOINT_ENV = 'CONTAINER_RUNTIME_ENDPOINT';
export const ENDPOINT_FLAG = '--runtime-endpoint';
export const CRICTL_CONFIG = '/etc/crictl.yaml';
export const CRICTL_CONFIG_ENV = 'PODCTL_CRICTL_CONFIG';

/**
 * The `runtime-endpoint` of a crictl configuration file (crictl's YAML is flat `key: value` lines;
 * read without a YAML parser to keep this module cheap), or undefined when there is none.
 */
export async function crictlEndpoint(file: string): Promise<string | undefined> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch {
    return undefined;
  }
  for (const line of text.split('\n')) {
    const m = /^runtime-endpoint\s*:\s*["']?([^"'#\s]+)["']?\s*(#.*)?$/.exec(line.trim());
    if (m?.[1]) return m[1];
  }
  return undefined;
}

export interface ResolvedEndpoint {
  /** gRPC target, `unix:///abs/path`. */
  endpoint: string;
  /** Filesystem path of the socket. */
  path: string;
  /** True when this is the embedded simulator's socket. */
  simulated: boolean;
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
  signal?: AbortSignal;
}

/** Resolution failed; `message` is one line naming the path and the flag. */
export class EndpointError extends Error {
  override readonly name = 'EndpointError';
  readonly path: string | undefined;
  readonly reason: 'invalid' | 'missing' | 'not-a-socket' | 'permission' | 'refused' | 'none';
  constructor(message: string, reason: EndpointError['reason'], socketPath?: string) {
    super(message);
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
    throw new EndpointError(
      `unsupported runtime endpoint "${value}": only unix sockets are supported (${ENDPOINT_FLAG} unix:///path/to/cri.sock)`,
      'invalid',
    );
  } else p = raw;
  if (!p || !path.isAbsolute(p)) {
    throw new EndpointError(
      `invalid runtime endpoint "${value}": expected an absolute socket path (${ENDPOINT_FLAG} unix:///path/to/cri.sock)`,
      'invalid',
    );
  }
  const normalized = path.normalize(p);
  return { endpoint: `unix://${normalized}`, path: normalized };
}

type SocketCheck =
  | { ok: true }
  | { ok: false; reason: 'missing' | 'not-a-socket' | 'permission' | 'refused'; detail: string };

/** Stat + bounded connect: is something serving this unix socket, and may we open it? */
export async function checkSocket(socketPath: string, timeoutMs = 500, signal?: AbortSignal): Promise<SocketCheck> {
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
  return connectProbe(socketPath, timeoutMs, signal);
}

function connectProbe(socketPath: string, timeoutMs: number, signal?: AbortSignal): Promise<SocketCheck> {
  return new Promise((resolve) => {
    const sock = net.createConnection({ path: socketPath });
    const done = (result: SocketCheck): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      sock.destroy();
      resolve(result);
    };
    const onAbort = (): void => done({ ok: false, reason: 'refused', detail: 'aborted' });
    const timer = setTimeout(() => done({ ok: false, reason: 'refused', detail: `no answer within ${timeoutMs} ms` }), timeoutMs);
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
  const hint =
    check.reason === 'permission'
      ? `run podctl as a user that may open it, or pass ${ENDPOINT_FLAG}`
      : `is the runtime running? pass ${ENDPOINT_FLAG} unix:///path/to/cri.sock`;
  return new EndpointError(`runtime endpoint ${socketPath} (${source}): ${check.detail}; ${hint}`, check.reason, socketPath);
}

/** Picks the CRI endpoint (see the module comment for the order). */
export async function resolveEndpoint(options: ResolveEndpointOptions = {}): Promise<ResolvedEndpoint> {
  const env = options.env ?? process.env;
  const probeMs = options.probeTimeoutMs ?? 500;
  const simulatorPath = options.stateDir ? path.join(options.stateDir, SIMULATOR_SOCKET_NAME) : undefined;

  const crictlFile = env[CRICTL_CONFIG_ENV] || CRICTL_CONFIG;
  const fromCrictl = options.flag || env[ENDPOINT_ENV] ? undefined : await crictlEndpoint(crictlFile);
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
    const check = await checkSocket(parsed.path, probeMs, options.signal);
    if (!check.ok) throw failure(parsed.path, check, explicit.source);
    return { ...parsed, simulated: simulatorPath !== undefined && parsed.path === path.normalize(simulatorPath) };
  }

  for (const candidate of options.wellKnown ?? WELL_KNOWN_SOCKETS) {
    const check = await checkSocket(candidate, probeMs, options.signal);
    if (check.ok) return { ...parseEndpoint(candidate), simulated: false };
    if (check.reason === 'permission') throw failure(candidate, check, 'default socket');
  }

  if (simulatorPath) {
    const check = await checkSocket(simulatorPath, probeMs, options.signal);
    if (check.ok) return { ...parseEndpoint(simulatorPath), simulated: true };
  }

  const tried = [...(options.wellKnown ?? WELL_KNOWN_SOCKETS), ...(simulatorPath ? [simulatorPath] : [])];
  throw new EndpointError(
    `no container runtime found (tried ${tried.join(', ')}); pass ${ENDPOINT_FLAG} unix:///path/to/cri.sock or start \`podctl simulator\``,
    'none',
  );
}
