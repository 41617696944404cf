import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A kubelet healthz stand-in on 127.0.0.1: answers `ok` to every request, after calling `onRequest`
 * (a test records there what podctl had already done when it asked the kubelet).
 */
export async function startHealthz(onRequest: () => void): Promise<{ url: string; close(): void }> {
  const server = http.createServer((_req, res) => {
    onRequest();
    res.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/healthz`, close: () => server.close() };
}
