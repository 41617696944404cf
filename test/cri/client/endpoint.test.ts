import { execFile, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import {
  CONNECT_TIMEOUT_MS,
  DEFAULT_RPC_TIMEOUT_MS,
  EndpointError,
  SANDBOX_TEARDOWN_TIMEOUT_MS,
  connectTimeoutFor,
  notCriError,
  parseEndpoint,
  readCrictlConfig,
  resolveEndpoint,
} from '../../../src/cri/client/endpoint.js';
import { useTempDir } from '../support.js';
import { holdAfterEachConnect } from '../../support/hold.js';

const servers: net.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise<void>((r) => s.close(() => r()))));
});

function serve(socketPath: string): Promise<void> {
  mkdirSync(path.dirname(socketPath), { recursive: true });
  const server = net.createServer((c) => c.destroy());
  servers.push(server);
  return new Promise((resolve) => server.listen(socketPath, () => resolve()));
}

/** A socket file nobody listens on (a runtime that was killed without cleaning up). */
async function staleSocket(socketPath: string): Promise<void> {
  mkdirSync(path.dirname(socketPath), { recursive: true });
  const child = spawn(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(socketPath)}, () => console.log('up'))`], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout.once('data', () => resolve());
    child.once('exit', () => reject(new Error('listener exited early')));
  });
  await new Promise<void>((resolve) => {
    child.removeAllListeners('exit');
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

describe('parseEndpoint', () => {
  it('accepts unix URLs and plain absolute paths', () => {
    expect(parseEndpoint('unix:///run/containerd/containerd.sock')).toEqual({
      endpoint: 'unix:///run/containerd/containerd.sock',
      path: '/run/containerd/containerd.sock',
    });
    expect(parseEndpoint('/var/run/crio/crio.sock').endpoint).toBe('unix:///var/run/crio/crio.sock');
    expect(parseEndpoint('unix:/tmp/x.sock').path).toBe('/tmp/x.sock');
  });

  it('rejects other schemes and relative paths with a one-line error naming the flag', () => {
    for (const bad of ['tcp://localhost:3735', 'npipe:////./pipe/x', 'relative.sock', 'unix://']) {
      const err = (() => {
        try {
          parseEndpoint(bad);
        } catch (e) {
          return e;
        }
      })();
      expect(err).toBeInstanceOf(EndpointError);
      expect((err as Error).message).toContain('--runtime-endpoint');
      expect((err as Error).message).not.toContain('\n');
    }
  });
});

describe('resolveEndpoint', () => {
  const dir = useTempDir();

  it("reads crictl's runtime-endpoint when no flag or environment names one; the flag and the environment win", async () => {
    const crictlSock = path.join(dir(), 'crictl.sock');
    const flagSock = path.join(dir(), 'flag2.sock');
    await serve(crictlSock);
    await serve(flagSock);
    const config = path.join(dir(), 'crictl.yaml');
    writeFileSync(config, `# crictl's file\nruntime-endpoint: "unix://${crictlSock}"\nimage-endpoint: unix:///x\ntimeout: 2\n`);
    const env = { PODCTL_CRICTL_CONFIG: config };
    expect((await resolveEndpoint({ env, wellKnown: [] })).path).toBe(crictlSock);
    expect((await resolveEndpoint({ env: { ...env, CONTAINER_RUNTIME_ENDPOINT: `unix://${flagSock}` }, wellKnown: [] })).path).toBe(flagSock);
    expect((await resolveEndpoint({ flag: flagSock, env, wellKnown: [] })).path).toBe(flagSock);
    // a crictl endpoint that is not there is an error naming the file, never silently replaced
    writeFileSync(config, 'runtime-endpoint: unix:///tmp/podctl-no-such-crictl.sock\n');
    const missing = await resolveEndpoint({ env, wellKnown: [crictlSock] }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(EndpointError);
    expect((missing as Error).message).toContain(`(runtime-endpoint in ${config})`);
    // a file without runtime-endpoint changes nothing
    writeFileSync(config, 'timeout: 10\n');
    expect((await resolveEndpoint({ env, wellKnown: [crictlSock] })).path).toBe(crictlSock);
  });

  it("takes the request deadline from the caller (flag or its variable), else crictl's timeout (seconds), else 10 s", async () => {
    const sock = path.join(dir(), 'timeout.sock');
    await serve(sock);
    const config = path.join(dir(), 'crictl-timeout.yaml');
    writeFileSync(config, `runtime-endpoint: unix://${sock}\ntimeout: 7 # seconds\n`);
    const env = { PODCTL_CRICTL_CONFIG: config };
    // crictl's file, also when the socket is named on the command line (crictl reads both keys)
    expect(await resolveEndpoint({ env, wellKnown: [] })).toMatchObject({ path: sock, timeoutMs: 7000, timeoutSource: 'crictl', teardownTimeoutMs: 7000, crictlFile: config });
    expect(await resolveEndpoint({ flag: sock, env, wellKnown: [] })).toMatchObject({ timeoutMs: 7000, timeoutSource: 'crictl' });
    // what the command line (or $PODCTL_REQUEST_TIMEOUT, through the flag) asks for wins
    expect(await resolveEndpoint({ env, requestTimeoutMs: 1500, wellKnown: [] })).toMatchObject({ path: sock, timeoutMs: 1500, timeoutSource: 'flag', teardownTimeoutMs: 1500 });
    // 0 means "not set", as crictl's 0: the file's, then the default
    expect(await resolveEndpoint({ env, requestTimeoutMs: 0, wellKnown: [] })).toMatchObject({ timeoutMs: 7000, timeoutSource: 'crictl' });
    writeFileSync(config, `runtime-endpoint: unix://${sock}\ntimeout: 0\n`);
    expect(await resolveEndpoint({ env, wellKnown: [] })).toMatchObject({ timeoutMs: DEFAULT_RPC_TIMEOUT_MS, timeoutSource: 'default' });
    writeFileSync(config, `runtime-endpoint: unix://${sock}\n`);
    expect(await resolveEndpoint({ env, wellKnown: [] })).toMatchObject({ timeoutMs: DEFAULT_RPC_TIMEOUT_MS, timeoutSource: 'default' });
    // crictl's own variable names the file when podctl's does not
    writeFileSync(config, `runtime-endpoint: unix://${sock}\ntimeout: "3"\n`);
    expect(await resolveEndpoint({ env: { CRI_CONFIG_FILE: config }, wellKnown: [] })).toMatchObject({ path: sock, timeoutMs: 3000, timeoutSource: 'crictl' });
  });

  it('refuses a crictl timeout that is not whole seconds, in one line naming the file', async () => {
    const config = path.join(dir(), 'crictl-bad.yaml');
    for (const bad of ['2s', 'soon', '1.5']) {
      writeFileSync(config, `timeout: ${bad}\n`);
      const err = await readCrictlConfig(config).catch((e: unknown) => e);
      expect(err, bad).toBeInstanceOf(EndpointError);
      expect((err as Error).message).toContain(`timeout in ${config}: "${bad}" is not a whole number of seconds`);
      expect((err as Error).message).not.toContain('\n');
    }
    expect(await readCrictlConfig(path.join(dir(), 'absent.yaml'))).toEqual({});
    writeFileSync(config, 'runtime-endpoint: unix:///a.sock\ntimeout: 4\ndebug: false\n');
    expect(await readCrictlConfig(config)).toEqual({ runtimeEndpoint: 'unix:///a.sock', timeoutSeconds: 4 });
  });

  it('bounds connecting by 2 s, or by the request deadline when shorter; the not-CRI line names the endpoint and the flag', () => {
    expect(connectTimeoutFor(DEFAULT_RPC_TIMEOUT_MS)).toBe(CONNECT_TIMEOUT_MS);
    expect(CONNECT_TIMEOUT_MS).toBe(2000);
    expect(connectTimeoutFor(500)).toBe(500);
    const resolved = { endpoint: 'unix:///x.sock', path: '/x.sock' };
    expect(notCriError({ ...resolved, source: '--runtime-endpoint' }, 2000).message).toBe('the runtime at unix:///x.sock did not answer as a CRI runtime within 2s (is --runtime-endpoint right?)');
    expect(notCriError({ ...resolved, source: 'runtime-endpoint in /etc/crictl.yaml' }, 500).message).toBe(
      'the runtime at unix:///x.sock did not answer as a CRI runtime within 500ms (is runtime-endpoint in /etc/crictl.yaml right? --runtime-endpoint overrides it)',
    );
    expect(notCriError({ ...resolved, source: 'default socket' }, 2000).message).toContain('(it is the default socket; pass --runtime-endpoint for another)');
    expect(notCriError({ ...resolved, source: 'default socket' }, 2000).reason).toBe('not-cri');
  });

  it('uses the flag first, then CONTAINER_RUNTIME_ENDPOINT', async () => {
    const flagSock = path.join(dir(), 'flag.sock');
    const envSock = path.join(dir(), 'env.sock');
    await serve(flagSock);
    await serve(envSock);
    const noCrictl = path.join(dir(), 'no-crictl.yaml');
    const env = { CONTAINER_RUNTIME_ENDPOINT: `unix://${envSock}`, PODCTL_CRICTL_CONFIG: noCrictl };
    expect(await resolveEndpoint({ flag: `unix://${flagSock}`, env, wellKnown: [] })).toEqual({
      endpoint: `unix://${flagSock}`,
      path: flagSock,
      simulated: false,
      source: '--runtime-endpoint',
      timeoutMs: DEFAULT_RPC_TIMEOUT_MS,
      timeoutSource: 'default',
      teardownTimeoutMs: SANDBOX_TEARDOWN_TIMEOUT_MS,
      crictlFile: noCrictl,
    });
    expect((await resolveEndpoint({ env, wellKnown: [] })).path).toBe(envSock);
  });

  it('reports a missing explicit socket in one line with the path and the flag, without falling back', async () => {
    const fallback = path.join(dir(), 'wk-present.sock');
    await serve(fallback);
    const missing = path.join(dir(), 'nope', 'cri.sock');
    const err = await resolveEndpoint({ flag: missing, env: {}, wellKnown: [fallback] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EndpointError);
    expect((err as EndpointError).reason).toBe('missing');
    expect((err as Error).message).toContain(missing);
    expect((err as Error).message).toContain('--runtime-endpoint');
    expect((err as Error).message).not.toContain('\n');
  });

  it('reports a socket nothing serves as refused', async () => {
    const stale = path.join(dir(), 'stale.sock');
    await staleSocket(stale);
    const err = await resolveEndpoint({ env: { CONTAINER_RUNTIME_ENDPOINT: stale }, wellKnown: [] }).catch((e: unknown) => e);
    expect((err as EndpointError).reason).toBe('refused');
    expect((err as Error).message).toContain(stale);
    expect((err as Error).message).toContain('CONTAINER_RUNTIME_ENDPOINT');
  });

  it('a served socket is served though this process was held past the probe bound (not "no answer within")', async () => {
    const sock = path.join(dir(), 'held.sock');
    await serve(sock);
    // held 600 ms right after the connection is asked for, against a 100 ms bound
    const held = holdAfterEachConnect(600);
    try {
      expect((await resolveEndpoint({ flag: sock, env: {}, wellKnown: [], probeTimeoutMs: 100 })).path).toBe(sock);
      expect(held.connects()).toBe(1);
    } finally {
      held.restore();
    }
  });

  it('rejects a path that is not a socket', async () => {
    const file = path.join(dir(), 'plain-file');
    writeFileSync(file, 'x');
    const err = await resolveEndpoint({ flag: file, env: {}, wellKnown: [] }).catch((e: unknown) => e);
    expect((err as EndpointError).reason).toBe('not-a-socket');
  });

  it('tries the well-known sockets in order', async () => {
    const a = path.join(dir(), 'wk-a.sock');
    const b = path.join(dir(), 'wk-b.sock');
    const c = path.join(dir(), 'wk-c.sock');
    await serve(b);
    await serve(c);
    expect((await resolveEndpoint({ env: {}, wellKnown: [a, b, c] })).path).toBe(b);
  });

  it('falls back to a serving simulator socket in the state dir', async () => {
    const stateDir = path.join(dir(), 'state');
    await serve(path.join(stateDir, 'simulator.sock'));
    const res = await resolveEndpoint({ env: {}, wellKnown: [path.join(dir(), 'absent.sock')], stateDir });
    expect(res).toMatchObject({ endpoint: `unix://${stateDir}/simulator.sock`, path: `${stateDir}/simulator.sock`, simulated: true, source: "the simulator's default socket" });
  });

  it('marks an explicit endpoint that is the simulator socket as simulated', async () => {
    const stateDir = path.join(dir(), 'state2');
    const sock = path.join(stateDir, 'simulator.sock');
    await serve(sock);
    expect((await resolveEndpoint({ flag: sock, env: {}, wellKnown: [], stateDir })).simulated).toBe(true);
  });

  it('says so in one line when no runtime is found', async () => {
    const err = await resolveEndpoint({ env: {}, wellKnown: [path.join(dir(), 'x.sock')], stateDir: path.join(dir(), 'empty') }).catch((e: unknown) => e);
    expect((err as EndpointError).reason).toBe('none');
    expect((err as Error).message).toContain('--runtime-endpoint');
    expect((err as Error).message).toContain('x.sock');
    expect((err as Error).message).not.toContain('\n');
  });

  it('reports a socket the user may not open (permission), naming the path and the flag', async () => {
    const sock = path.join(dir(), 'private', 'cri.sock');
    await serve(sock);
    chmodSync(sock, 0o600);
    chmodSync(dir(), 0o755);
    const endpointModule = fileURLToPath(new URL('../../../src/cri/client/endpoint.ts', import.meta.url));
    let message: string;
    if (process.getuid?.() === 0) {
      // root may open anything: ask as an unprivileged user, in a child process
      const script = path.join(dir(), 'probe.mts');
      writeFileSync(
        script,
        `import { resolveEndpoint } from ${JSON.stringify(endpointModule)};\n` +
          `resolveEndpoint({ flag: ${JSON.stringify(sock)}, env: {}, wellKnown: [] }).then(` +
          `() => console.log('ok'), (e) => console.log(JSON.stringify({ reason: e.reason, message: e.message })));\n`,
      );
      chmodSync(script, 0o644);
      const tsx = fileURLToPath(new URL('../../../node_modules/tsx/dist/loader.mjs', import.meta.url));
      const out = await new Promise<string>((resolve, reject) =>
        execFile(process.execPath, ['--import', tsx, script], { uid: 65534, gid: 65534, env: { PATH: process.env.PATH ?? '', HOME: '/tmp', TSX_DISABLE_CACHE: '1' } }, (err, stdout, stderr) =>
          err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout),
        ),
      );
      const parsed = JSON.parse(out.trim()) as { reason: string; message: string };
      expect(parsed.reason).toBe('permission');
      message = parsed.message;
    } else {
      const err = await resolveEndpoint({ flag: sock, env: {}, wellKnown: [] }).catch((e: unknown) => e);
      expect((err as EndpointError).reason).toBe('permission');
      message = (err as Error).message;
    }
    expect(message).toContain(sock);
    expect(message).toContain('--runtime-endpoint');
    expect(message).toContain('permission denied');
    expect(message).not.toContain('\n');
  });
});
