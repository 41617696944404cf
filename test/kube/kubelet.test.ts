/** Kubelet detection (one module): healthz, /proc, the node Lease fallback; and the one kill policy. */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { detectKubelet, desiredPodPolicy, healthzUrl, kubeletProcessExists } from '../../src/kube/kubelet.js';
import { holdThread } from '../support/hold.js';

let healthz: http.Server;
let answer = 'ok';
let okUrl: string;
let refusedUrl: string;
let silent: http.Server;
let silentUrl: string;

function procDir(processes: Record<string, string>): string {
  const root = mkdtempSync(path.join(tmpdir(), 'podctl-proc-'));
  for (const [pid, comm] of Object.entries(processes)) {
    mkdirSync(path.join(root, pid));
    writeFileSync(path.join(root, pid, 'comm'), `${comm}\n`);
  }
  return root;
}

beforeAll(async () => {
  healthz = http.createServer((_req, res) => res.end(answer));
  await new Promise<void>((r) => healthz.listen(0, '127.0.0.1', r));
  okUrl = `http://127.0.0.1:${(healthz.address() as AddressInfo).port}/healthz`;
  const closed = http.createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  refusedUrl = `127.0.0.1:${(closed.address() as AddressInfo).port}`;
  await new Promise<void>((r) => closed.close(() => r()));
  silent = http.createServer(() => {});
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  silentUrl = `127.0.0.1:${(silent.address() as AddressInfo).port}`;
});
afterAll(() => {
  healthz.close();
  silent.closeAllConnections();
  silent.close();
});

describe('detectKubelet', () => {
  const noKubelet = (): string => procDir({ '1': 'systemd', '42': 'containerd' });

  it('running when the healthz answers ok, or when a kubelet process exists', async () => {
    expect(await detectKubelet({ healthz: okUrl, procRoot: noKubelet() })).toMatchObject({ state: 'running', via: 'healthz' });
    expect(await detectKubelet({ healthz: refusedUrl, procRoot: procDir({ '1': 'systemd', '77': 'kubelet' }) })).toMatchObject({ state: 'running', via: 'process' });
  });

  it('a healthz that answers ok is the whole check: /proc is not read', async () => {
    // a /proc that names a kubelet: read, it would show in how the answer was reached
    const status = await detectKubelet({ healthz: okUrl, procRoot: procDir({ '1': 'systemd', '77': 'kubelet' }) });
    expect(status).toEqual({ state: 'running', via: 'healthz', detail: expect.stringMatching(/answered ok$/) });
  });

  it('down at once when the healthz is refused and /proc has no kubelet', async () => {
    const status = await detectKubelet({ healthz: refusedUrl, procRoot: noKubelet() });
    expect(status).toMatchObject({ state: 'down' });
    expect(status.detail).toMatch(/no kubelet process; healthz .* refused/);
  });

  it('a healthz that answers something else than ok is not "down": unknown (treated as running)', async () => {
    answer = 'unhealthy';
    try {
      expect(await detectKubelet({ healthz: okUrl, procRoot: noKubelet() })).toMatchObject({ state: 'unknown' });
    } finally {
      answer = 'ok';
    }
  });

  it('neither checkable: the node Lease decides (stale after 40 s), else unknown', async () => {
    const unreadable = path.join(tmpdir(), 'podctl-no-such-proc');
    const now = Date.now();
    const base = { healthz: silentUrl, procRoot: unreadable, timeoutMs: 150, now: () => now };
    expect(await detectKubelet({ ...base, leaseRenewedAt: async () => new Date(now - 41_000) })).toMatchObject({ state: 'down', via: 'lease' });
    expect(await detectKubelet({ ...base, leaseRenewedAt: async () => new Date(now - 5_000) })).toMatchObject({ state: 'running', via: 'lease' });
    expect(await detectKubelet({ ...base, leaseRenewedAt: async () => undefined })).toMatchObject({ state: 'unknown', via: 'none' });
    expect(await detectKubelet(base)).toMatchObject({ state: 'unknown' });
  });

  it('reads /proc/<pid>/comm; an unreadable /proc is "cannot tell"', async () => {
    expect(kubeletProcessExists(procDir({ '9': 'kubelet' }))).toBe(true);
    expect(kubeletProcessExists(procDir({ '9': 'kubelet-helper' }))).toBe(false);
    expect(kubeletProcessExists('/nonexistent-proc')).toBeUndefined();
    expect(healthzUrl(undefined).href).toBe('http://127.0.0.1:10248/healthz');
    expect(healthzUrl('10.0.0.1:10248').href).toBe('http://10.0.0.1:10248/healthz');
  });
});

/** A healthz that writes `reply` (raw bytes) to whatever it is sent, then closes; records the request. */
async function rawHealthz(reply: string, seen: string[] = []): Promise<{ url: string; close(): void }> {
  const server = net.createServer((socket) => {
    let request = '';
    socket.on('data', (chunk) => {
      request += chunk.toString('latin1');
      if (!request.includes('\r\n\r\n')) return;
      seen.push(request);
      socket.end(reply, 'latin1');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/healthz?verbose=0`, close: () => server.close() };
}

describe('the healthz probe (an HTTP/1.1 GET of its own over TCP)', () => {
  const noKubelet = (): string => procDir({ '1': 'systemd' });

  it('sends one GET with the path, Host and Connection: close, and reads a chunked "ok"', async () => {
    const seen: string[] = [];
    const server = await rawHealthz('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\no\r\n1\r\nk\r\n0\r\n\r\n', seen);
    try {
      expect(await detectKubelet({ healthz: server.url, procRoot: noKubelet() })).toMatchObject({ state: 'running', via: 'healthz' });
      const port = new URL(server.url).port;
      expect(seen).toEqual([`GET /healthz?verbose=0 HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`]);
    } finally {
      server.close();
    }
  });

  it('a body read to the end of the connection, and one cut by Content-Length', async () => {
    for (const reply of ['HTTP/1.0 200 OK\r\n\r\nok\n', 'HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokay']) {
      const server = await rawHealthz(reply);
      try {
        expect(await detectKubelet({ healthz: server.url, procRoot: noKubelet() })).toMatchObject({ state: 'running', via: 'healthz' });
      } finally {
        server.close();
      }
    }
  });

  it('another status is "answered HTTP <code>" (unknown); an answer that is not HTTP, or one cut short, is a healthz that cannot answer', async () => {
    const cases: [string, string, RegExp][] = [
      ['HTTP/1.1 500 Internal Server Error\r\nContent-Length: 2\r\n\r\nok', 'unknown', /^healthz 127\.0\.0\.1:\d+ answered HTTP 500$/],
      ['SSH-2.0-OpenSSH_9.6\r\n\r\n', 'down', /^no kubelet process; healthz 127\.0\.0\.1:\d+: HPE_INVALID_CONSTANT$/],
      ['HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nok', 'down', /^no kubelet process; healthz 127\.0\.0\.1:\d+: ECONNRESET$/],
      ['HTTP/1.1 200 OK\r\nContent-', 'down', /^no kubelet process; healthz 127\.0\.0\.1:\d+: ECONNRESET$/],
    ];
    for (const [reply, state, detail] of cases) {
      const server = await rawHealthz(reply);
      try {
        const status = await detectKubelet({ healthz: server.url, procRoot: noKubelet() });
        expect(status.state).toBe(state);
        expect(status.detail).toMatch(detail);
      } finally {
        server.close();
      }
    }
  });
});

/** A healthz in another process (as the kubelet is), answering ok `delayMs` after each request; its URL. */
async function healthzProcess(delayMs = 0): Promise<{ url: string; close(): void }> {
  const server = `const s=require('http').createServer((q,r)=>setTimeout(()=>r.end('ok'),${delayMs})).listen(0,'127.0.0.1',()=>console.log(s.address().port))`;
  const child = spawn(process.execPath, ['-e', server], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString().trim()));
    child.once('exit', (code) => reject(new Error(`healthz process exited ${code}`)));
  });
  return { url: `http://127.0.0.1:${port}/healthz`, close: () => child.kill() };
}

describe('the healthz bound counts time this process could hear the answer', () => {
  const noKubelet = (): string => procDir({ '1': 'systemd' });

  it('a stall longer than the bound before the connection is made is not a healthz that did not answer', async () => {
    const server = await healthzProcess();
    try {
      const detected = detectKubelet({ healthz: server.url, procRoot: noKubelet(), timeoutMs: 500 });
      holdThread(1_500);
      expect(await detected).toMatchObject({ state: 'running', via: 'healthz' });
    } finally {
      server.close();
    }
  });

  it('nor one after the request went out, while the answer waits to be read', async () => {
    // the answer comes 60 ms after the request, while this process is held
    const server = await healthzProcess(60);
    try {
      const detected = detectKubelet({ healthz: server.url, procRoot: noKubelet(), timeoutMs: 500 });
      await new Promise((resolve) => setTimeout(resolve, 30));
      // from the check phase: the loop's next turn begins with its timers, before it reads any socket
      await new Promise((resolve) => setImmediate(resolve));
      holdThread(1_500);
      expect(await detected).toMatchObject({ state: 'running', via: 'healthz' });
    } finally {
      server.close();
    }
  });

  it('a peer that stays silent while this process runs is still "no answer within" the bound', async () => {
    const started = performance.now();
    const status = await detectKubelet({ healthz: silentUrl, procRoot: noKubelet(), timeoutMs: 200 });
    expect(status).toMatchObject({ state: 'down', detail: expect.stringMatching(/no answer within 200 ms$/) });
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});

describe('desiredPodPolicy', () => {
  it('desired pods beside a running (or unknown) kubelet: through the API when one is configured, else refused unless --force; nothing changes when it is down', () => {
    const decide = (kubelet: 'running' | 'down' | 'unknown', desired: boolean, flags: { force?: boolean; viaApi?: boolean; api?: boolean } = {}) =>
      desiredPodPolicy({ kubelet, desired, force: flags.force ?? false, viaApi: flags.viaApi ?? false, api: flags.api ?? false });
    expect(decide('running', true)).toBe('refuse');
    expect(decide('unknown', true)).toBe('refuse');
    expect(decide('running', true, { api: true })).toBe('via-api');
    expect(decide('unknown', true, { api: true })).toBe('via-api');
    expect(decide('running', true, { viaApi: true })).toBe('via-api');
    expect(decide('running', true, { force: true, api: true })).toBe('proceed');
    expect(decide('down', true)).toBe('proceed');
    expect(decide('down', true, { api: true })).toBe('proceed');
    expect(decide('running', false)).toBe('proceed');
  });
});
