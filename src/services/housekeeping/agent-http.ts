/**
 * The agent's HTTP server: exactly `/metrics`, `/healthz` and `/readyz` (GET/HEAD), anything else
 * 404/405; the health verdicts and their report are agent-health.ts's.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { UsageError } from '../../lib/errors.js';
import type { PodctlMetrics } from '../../metrics/registry.js';
import type { AgentHealth } from './agent-health.js';

const DEFAULT_METRICS_ADDR = '127.0.0.1:9640';

export interface MetricsAddress {
  host: string;
  port: number;
}

/** Parses `HOST:PORT` (IPv6 as `[::1]:9640`); port 0 picks a free one. */
export function parseMetricsAddr(text: string): MetricsAddress {
  const m = /^(?:\[([0-9a-fA-F:]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text.trim());
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65_535) throw new UsageError(`--metrics-addr "${text}" is not HOST:PORT`, `e.g. --metrics-addr ${DEFAULT_METRICS_ADDR}`);
  return { host: (m[1] ?? m[2]) as string, port };
}

export async function serve(listen: MetricsAddress, metrics: PodctlMetrics, state: AgentHealth, signal: AbortSignal): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics' && path !== '/healthz' && path !== '/readyz') {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found: podctl agent serves /metrics, /healthz and /readyz\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('method not allowed\n');
      return;
    }
    if (path === '/healthz' || path === '/readyz') {
      const reason = path === '/healthz' ? state.notLive() : state.notReady();
      res.writeHead(reason ? 503 : 200, { 'content-type': 'text/plain; charset=utf-8' }).end(req.method === 'HEAD' ? undefined : state.report(reason));
      return;
    }
    metrics.exposition().then(
      (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(req.method === 'HEAD' ? undefined : text),
      (error: Error) => res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end(`${error.message}\n`),
    );
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException): void => {
      reject(new UsageError(`--metrics-addr ${listen.host}:${listen.port}: cannot listen (${error.code ?? error.message})`, 'choose another HOST:PORT'));
    };
    server.once('error', onError);
    server.listen(listen.port, listen.host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  signal.addEventListener('abort', () => server.closeIdleConnections(), { once: true });
  return server;
}

export function addressOf(server: http.Server): MetricsAddress {
  const a = server.address() as AddressInfo;
  return { host: a.address, port: a.port };
}

export function closeServer(server: http.Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
