/**
 * The HTTP(S) transport to the API server: one request or one watch stream, with the kubeconfig's
 * credentials (applied by @kubernetes/client-node's KubeConfig), a deadline, and every failure turned
 * into a `KubeError` carrying the Status reason and Retry-After.
 *
 * Invariants:
 * - A request never outlives its deadline: the socket is destroyed and the call rejects with a
 *   transient KubeError naming the server and the deadline (`deadlineMs`).
 * - A watch stream's lines are parsed one JSON event each; the stream's end resolves, an error
 *   rejects; an abort ends it quietly.
 * - A watch never hangs: once answered, a stream silent (no event, no bookmark, no byte) for
 *   `idleMs` is cut and the call rejects with a transient KubeError, so its follower resumes it (a
 *   half-open connection would otherwise be followed for ever).
 */
import http from 'node:http';
import https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { KubeError, parseRetryAfter } from './errors.js';
import { formatDuration } from '../lib/duration.js';

export interface KubeRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
}

interface KubeResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: unknown;
}

export interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: Record<string, unknown>;
}

interface WatchOptions {
  connectTimeoutMs: number;
  /** Longest silence accepted once the stream is open (the server's bookmark interval plus a margin). */
  idleMs?: number;
  onOpen?: () => void;
  signal?: AbortSignal;
}

export interface Transport {
  /** Where the credentials come from, for messages ("kubeconfig /root/.kube/config"). */
  readonly where: string;
  /** The API server's address, for messages ("https://10.0.0.1:6443"). */
  readonly server: string;
  /** One request; a non-2xx answer rejects with a KubeError. */
  request(call: string, request: KubeRequest, options: { timeoutMs: number; signal?: AbortSignal }): Promise<KubeResponse>;
  /**
   * A watch stream: resolves when the server ends it, rejects on errors; `connectTimeoutMs` bounds the
   * headers, `idleMs` the silence after them; `onOpen` hears the server's 2xx answer.
   */
  watch(call: string, request: KubeRequest, onEvent: (event: WatchEvent) => void, options: WatchOptions): Promise<void>;
}

function buildPath(request: KubeRequest): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(request.query ?? {})) if (v !== undefined) params.set(k, String(v));
  const qs = params.toString();
  return qs ? `${request.path}?${qs}` : request.path;
}

function statusOf(body: unknown): { reason?: string; message?: string; details?: { causes?: { reason?: string; message?: string }[] } } {
  if (typeof body === 'object' && body !== null && (body as { kind?: string }).kind === 'Status') return body;
  return {};
}

/** The API server a transport speaks to, and how its messages name it. */
interface Target {
  config: KubeConfig;
  base: URL;
  secure: boolean;
  /** The server URL's path, without its trailing slash, put before every request's path. */
  prefix: string;
  /** The server's origin ("https://10.0.0.1:6443"). */
  server: string;
  where: string;
}

/** The node request options of one call: path, headers, and the kubeconfig's credentials. */
async function requestOptions(target: Target, request: KubeRequest, accept: string): Promise<http.RequestOptions> {
  const { base, secure } = target;
  const headers: Record<string, string> = { accept, 'user-agent': 'podctl' };
  if (request.body !== undefined) {
    headers['content-type'] = request.contentType ?? 'application/json';
    headers['content-length'] = String(Buffer.byteLength(JSON.stringify(request.body)));
  }
  const options: https.RequestOptions = {
    method: request.method,
    hostname: base.hostname.replace(/^\[|\]$/g, ''),
    port: base.port || (secure ? 443 : 80),
    path: target.prefix + buildPath(request),
    headers,
  };
  await target.config.applyToHTTPSOptions(options);
  if (!secure) delete options.agent;
  return options;
}

/** The KubeError of a non-2xx answer: its Status reason, message and causes, and its Retry-After. */
function statusError(target: Target, call: string, status: number, headers: http.IncomingHttpHeaders, body: unknown): KubeError {
  const s = statusOf(body);
  const detail = s.message ?? (typeof body === 'string' && body ? body.slice(0, 200) : (http.STATUS_CODES[status] ?? 'error'));
  const retryAfter = parseRetryAfter(headers['retry-after']);
  return new KubeError(call, `${call} failed (HTTP ${status}${s.reason ? ` ${s.reason}` : ''}): ${detail.split('\n')[0]} (${target.where})`, status, {
    ...(s.reason ? { reason: s.reason } : {}),
    ...(retryAfter !== undefined ? { retryAfterMs: retryAfter } : {}),
    ...(Array.isArray(s.details?.causes) ? { causes: s.details.causes } : {}),
  });
}

/** The transient KubeError of a connection that failed or was cut. */
function connectionError(target: Target, call: string, error: Error): KubeError {
  const reason = (error as NodeJS.ErrnoException).code ?? error.message;
  return new KubeError(call, `${call}: cannot reach the API server: ${reason} (${target.where})`, undefined, { cause: error, transient: true });
}

/** The transient KubeError of a call not answered within its deadline (`ms`). */
function silentError(target: Target, call: string, ms: number): KubeError {
  return new KubeError(call, `${call}: no answer from the API server ${target.server} within ${formatDuration(ms)} (${target.where})`, undefined, {
    transient: true,
    deadlineMs: ms,
  });
}

/** Reads an answer's whole body: its JSON, its text when it is not JSON, undefined when empty. */
function readBody(res: http.IncomingMessage, done: (body: unknown) => void): void {
  let raw = '';
  res.setEncoding('utf8');
  res.on('data', (c: string) => (raw += c));
  res.on('end', () => {
    let body: unknown = raw;
    try {
      body = raw ? JSON.parse(raw) : undefined;
    } catch {
      /* not JSON: keep the text */
    }
    done(body);
  });
}

/** Transport.request: one call, settled once by its answer, its deadline, an abort or an error. */
async function sendRequest(target: Target, call: string, request: KubeRequest, timeoutMs: number, signal?: AbortSignal): Promise<KubeResponse> {
  const options = await requestOptions(target, request, 'application/json');
  return new Promise<KubeResponse>((resolve, reject) => {
    let settled = false;
    const settle = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      fn();
    };
    const req = (target.secure ? https : http).request(options, (res) => {
      res.on('error', (error) => settle(() => reject(connectionError(target, call, error))));
      readBody(res, (body) => {
        const status = res.statusCode ?? 0;
        settle(() => (status >= 200 && status < 300 ? resolve({ status, headers: res.headers, body }) : reject(statusError(target, call, status, res.headers, body))));
      });
    });
    const timer = setTimeout(() => {
      settle(() => reject(silentError(target, call, timeoutMs)));
      req.destroy();
    }, timeoutMs);
    const onAbort = (): void => {
      settle(() => reject(signal?.reason ?? new DOMException('aborted', 'AbortError')));
      req.destroy();
    };
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    req.on('error', (error) => settle(() => reject(connectionError(target, call, error))));
    if (request.body !== undefined) req.write(JSON.stringify(request.body));
    req.end();
  });
}

/**
 * Hands each whole line of a stream's chunks to `onLine`, blank lines skipped; a line split over
 * chunks waits for its end. Stops at the first line `onLine` rejects (returns false).
 */
function lineSplitter(onLine: (line: string) => boolean): (chunk: string) => void {
  let buffer = '';
  return (chunk) => {
    buffer += chunk;
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl).trim();
      buffer = buffer.slice(nl + 1);
      if (line && !onLine(line)) return;
    }
  };
}

/** Transport.watch: a stream of events, bounded by its connect deadline and its idle bound. */
async function followWatch(target: Target, call: string, request: KubeRequest, onEvent: (event: WatchEvent) => void, watch: WatchOptions): Promise<void> {
  const { connectTimeoutMs, idleMs, onOpen, signal } = watch;
  const options = await requestOptions(target, request, 'application/json');
  return new Promise<void>((resolve, reject) => {
    let settled = false;
    let idle: NodeJS.Timeout | undefined;
    const settle = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(idle);
      signal?.removeEventListener('abort', onAbort);
      fn();
    };
    const cut = (error: unknown): void => {
      settle(() => reject(error));
      req.destroy();
    };
    const quiet = (): void => {
      if (idleMs === undefined) return;
      clearTimeout(idle);
      idle = setTimeout(
        () => cut(new KubeError(call, `${call}: nothing from the API server ${target.server} for ${formatDuration(idleMs)} (no event, no bookmark) (${target.where})`, undefined, { transient: true })),
        idleMs,
      );
    };
    const onLine = (line: string): boolean => {
      try {
        onEvent(JSON.parse(line) as WatchEvent);
        return true;
      } catch (error) {
        cut(error);
        return false;
      }
    };
    const req = (target.secure ? https : http).request(options, (res) => {
      clearTimeout(timer);
      const status = res.statusCode ?? 0;
      if (status < 200 || status >= 300) return readBody(res, (body) => settle(() => reject(statusError(target, call, status, res.headers, body))));
      res.setEncoding('utf8');
      quiet();
      onOpen?.();
      const lines = lineSplitter(onLine);
      res.on('data', (chunk: string) => {
        quiet();
        lines(chunk);
      });
      res.on('end', () => settle(resolve));
      res.on('aborted', () => settle(() => reject(connectionError(target, call, new Error('watch stream cut')))));
      res.on('error', (error) => settle(() => reject(connectionError(target, call, error))));
    });
    const timer = setTimeout(() => cut(silentError(target, call, connectTimeoutMs)), connectTimeoutMs);
    const onAbort = (): void => {
      settle(resolve);
      req.destroy();
    };
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    req.on('error', (error) => settle(() => reject(connectionError(target, call, error))));
    req.end();
  });
}

export function transportFor(config: KubeConfig, where: string): Transport {
  const cluster = config.getCurrentCluster();
  if (!cluster) throw new Error('no current cluster');
  const base = new URL(cluster.server);
  const target: Target = { config, base, secure: base.protocol === 'https:', prefix: base.pathname.replace(/\/$/, ''), server: base.origin, where };
  return {
    where,
    server: target.server,
    request: (call, request, { timeoutMs, signal }) => sendRequest(target, call, request, timeoutMs, signal),
    watch: (call, request, onEvent, options) => followWatch(target, call, request, onEvent, options),
  };
}
