/**
 * The httpGet preStop hook as the kubelet runs it (runHTTPHandler): a GET to the handler's host (the
 * pod IP by default, the node for a host-network pod), its port (a number, or a container port name
 * resolved against the container's ports; 80 when unset), its path, scheme and headers, bounded by
 * what is left of the grace. Like the kubelet, an HTTPS hook does not verify the certificate and a
 * response outside 200..399 is a failed hook.
 *
 * Invariants: the request ends (aborted) when the bound passes or the caller's signal aborts; the
 * response body is read at most 10 KiB (the kubelet's limit for a hook's message). node:http and
 * node:https are loaded when a hook runs, not with the runtime (every command's path).
 */
import type { V1ContainerPort, V1HTTPGetAction } from '@kubernetes/client-node';

/** The node's address for host-network pods (podctl runs on the node). */
export const NODE_ADDRESS = '127.0.0.1';
const MAX_BODY_BYTES = 10 * 1024;

export class HookNotRunnable extends Error {}

/** The port number of an httpGet hook: a number, a named container port, or 80 when unset. */
export function resolveHookPort(port: V1HTTPGetAction['port'] | undefined, ports: readonly V1ContainerPort[]): number {
  if (port === undefined || port === null || port === '' || port === 0) return 80;
  if (typeof port === 'number') return port;
  if (/^\d+$/.test(port)) return Number(port);
  const named = ports.find((p) => p.name === port);
  if (!named) throw new HookNotRunnable(`no container port named "${port}"`);
  return named.containerPort;
}

/** The URL an httpGet hook requests. */
export function hookUrl(action: V1HTTPGetAction, host: string, port: number): URL {
  const scheme = (action.scheme ?? 'HTTP').toLowerCase() === 'https' ? 'https' : 'http';
  const bracketed = host.includes(':') ? `[${host}]` : host;
  let path = action.path ?? '';
  if (path !== '' && !path.startsWith('/')) path = `/${path}`;
  return new URL(`${scheme}://${bracketed}:${port}${path}`);
}

export interface HttpHookResult {
  status: number;
  body: string;
}

/** Sends the GET; resolves with the status (any), rejects on a transport error, timeout or abort. */
export function runHttpGet(url: URL, headers: V1HTTPGetAction['httpHeaders'], timeoutMs: number, signal: AbortSignal): Promise<HttpHookResult> {
  return new Promise((resolve, reject) => {
    const requestHeaders: Record<string, string> = { 'User-Agent': 'kube-lifecycle/podctl', Accept: '*/*' };
    for (const h of headers ?? []) {
      if (h.name) requestHeaders[h.name] = h.value ?? '';
    }
    const lib = url.protocol === 'https:' ? process.getBuiltinModule('node:https') : process.getBuiltinModule('node:http');
    const req = lib.request(url, {
      method: 'GET',
      headers: requestHeaders,
      ...(url.protocol === 'https:' ? { rejectUnauthorized: false } : {}),
    });
    const timer = setTimeout(() => req.destroy(new Error(`no answer from ${url.href} within ${Math.round(timeoutMs / 100) / 10}s`)), Math.max(1, timeoutMs));
    const onAbort = (): void => {
      req.destroy(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    const finish = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    };
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        if (size < MAX_BODY_BYTES) chunks.push(chunk);
        size += chunk.length;
      });
      res.on('end', () => {
        finish();
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).subarray(0, MAX_BODY_BYTES).toString('utf8') });
      });
      res.on('error', (err) => {
        finish();
        reject(err);
      });
    });
    req.on('error', (err) => {
      finish();
      reject(err);
    });
    if (signal.aborted) onAbort();
    req.end();
  });
}
