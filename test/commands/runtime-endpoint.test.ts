/**
 * The runtime endpoint as a crictl user sets it up, through the built CLI (`node bin/run.js`):
 * - a socket that accepts and never speaks, or speaks something other than HTTP/2, ends the
 *   command (status, kill, sync-known, watch, version) with exit 1 and ONE line naming the endpoint and --runtime-endpoint (the connect bound
 *   is 2 s; each run here has its own bound of 15 s, which only ends a hang — speed is bench/'s);
 * - the per-request deadline: --timeout (crictl's name, where the command has no --timeout of its
 *   own) or --request-timeout, then $PODCTL_REQUEST_TIMEOUT, then crictl.yaml's `timeout`
 *   (seconds), then 10 s — seen in what a hung runtime's Version call says it waited;
 * - which flag reaches the session (in-process, fake session): kill's --timeout stays its wait.
 * Needs `npm run build` first (the test script does it).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Agent from '../../src/commands/agent.js';
import Drain from '../../src/commands/drain.js';
import Evict from '../../src/commands/evict.js';
import Kill from '../../src/commands/kill.js';
import Status from '../../src/commands/status.js';
import SyncKnown from '../../src/commands/sync-known.js';
import Version from '../../src/commands/version.js';
import Watch from '../../src/commands/watch.js';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import { handOffArgs } from '../../src/session/hand-off.js';
import { FakeSession } from '../services/fake-session.js';
import { runCommand } from './harness.js';

const ROOT = process.cwd();
const BIN = path.join(ROOT, 'bin', 'run.js');
/** Each run's own bound: well past the 2 s connect bound, so only a hang reaches it. */
const RUN_BOUND_MS = 15_000;

interface Run {
  /** The exit code, or null when the run was ended by its bound (or a signal). */
  code: number | null;
  stdout: string;
  stderr: string;
}

let dir = '';

function podctl(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          NO_COLOR: '1',
          KUBECONFIG: '',
          CONTAINER_RUNTIME_ENDPOINT: '',
          PODCTL_REQUEST_TIMEOUT: '',
          PODCTL_CRICTL_CONFIG: path.join(dir, 'no-crictl.yaml'),
          PODCTL_STATE_DIR: path.join(dir, 'state'),
          ...env,
        },
        timeout: RUN_BOUND_MS,
      },
      (error, stdout, stderr) => {
        const killed = error !== null && (error.killed || error.signal !== null);
        resolve({ code: killed ? null : error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
      },
    );
  });
}

const servers: net.Server[] = [];
const connections = new Set<net.Socket>();

async function listen(name: string, onConnection: (c: net.Socket) => void): Promise<string> {
  const socketPath = path.join(dir, name);
  const server = net.createServer((c) => {
    connections.add(c);
    c.on('error', () => undefined);
    c.on('close', () => connections.delete(c));
    onConnection(c);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  return socketPath;
}

beforeAll(() => {
  if (!existsSync(path.join(ROOT, 'dist', 'commands', 'kill.js'))) throw new Error('dist/ is missing: run `npm run build` before the CLI tests');
  dir = mkdtempSync(path.join(tmpdir(), 'podctl-endpoint-'));
});

afterAll(async () => {
  for (const c of connections) c.destroy();
  await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  rmSync(dir, { recursive: true, force: true });
});

// concurrent: each run mostly waits on its 2 s connect bound
describe.concurrent('a socket that is not a CRI runtime fails fast, in one line', { timeout: 60_000 }, () => {
  let deaf = '';
  let garbage = '';
  beforeAll(async () => {
    // accepts the connection and says nothing, ever
    deaf = await listen('deaf.sock', () => undefined);
    // answers at once, but not in HTTP/2
    garbage = await listen('garbage.sock', (c) => c.end('HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n'));
  });

  const commands: [string, string[]][] = [
    ['status', ['status']],
    ['kill', ['kill', 'web/api', '--yes']],
    ['sync-known', ['sync-known', '--desired-from', 'runtime', '--yes']],
  ];

  for (const [what, socket] of [
    ['accepts and never speaks', () => deaf],
    ['speaks something else', () => garbage],
  ] as const) {
    it.each(commands)(`${what}: %s ends with exit 1 and one line naming the endpoint and --runtime-endpoint`, async (_name, args) => {
      const run = await podctl([...args, '--runtime-endpoint', `unix://${socket()}`]);
      expect(run.code, `the run did not end by itself within ${RUN_BOUND_MS} ms: ${run.stderr}`).not.toBeNull();
      expect(run.code, run.stderr).toBe(1);
      expect(run.stdout).toBe('');
      expect(run.stderr).toBe(`error: the runtime at unix://${socket()} did not answer as a CRI runtime within 2s (is --runtime-endpoint right?)\n`);
    });
  }

  it('with --json the same line is the error object on stdout', async () => {
    const run = await podctl(['status', '--json', '-r', deaf]);
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toEqual({
      error: { name: 'RuntimeError', message: `the runtime at unix://${deaf} did not answer as a CRI runtime within 2s (is --runtime-endpoint right?)`, exitCode: 1 },
    });
  });

  it("watch -o json: the same line on stderr, and as the stream's error record on stdout", async () => {
    const run = await podctl(['watch', '-o', 'json', '-r', deaf]);
    expect(run.code, `the run did not end by itself within ${RUN_BOUND_MS} ms`).toBe(1);
    const line = `the runtime at unix://${deaf} did not answer as a CRI runtime within 2s (is --runtime-endpoint right?)`;
    expect(run.stderr).toBe(`error: ${line}\n`);
    const records = run.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; error?: unknown });
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ type: 'error', error: { name: 'RuntimeError', message: line, exitCode: 1 } });
  });

  it('named by crictl.yaml: the line names the file and --runtime-endpoint', async () => {
    const config = path.join(dir, 'crictl-deaf.yaml');
    writeFileSync(config, `runtime-endpoint: unix://${deaf}\n`);
    const run = await podctl(['status'], { PODCTL_CRICTL_CONFIG: config });
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr.trim().split('\n')).toEqual([
      `error: the runtime at unix://${deaf} did not answer as a CRI runtime within 2s (is runtime-endpoint in ${config} right? --runtime-endpoint overrides it)`,
    ]);
  });

  it('a request deadline under 2 s bounds connecting too', async () => {
    const run = await podctl(['status', '-r', deaf, '--timeout', '500ms']);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(`error: the runtime at unix://${deaf} did not answer as a CRI runtime within 500ms (is --runtime-endpoint right?)\n`);
  });

  it('podctl version says it in its one line too', async () => {
    const run = await podctl(['version', '-r', garbage]);
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split('\n')).toEqual([
      `error: runtime version: the runtime at unix://${garbage} did not answer as a CRI runtime within 2s (is --runtime-endpoint right?) (podctl version --client shows podctl's own versions)`,
    ]);
  });
});

describe('the request deadline: flag, then $PODCTL_REQUEST_TIMEOUT, then crictl.yaml, then 10 s', { timeout: 60_000 }, () => {
  let sim: RunningSimulator | undefined;
  let config = '';
  beforeAll(async () => {
    // a runtime that connects and then never answers Version (the caller's deadline ends the call)
    sim = await startSimulator({ socketPath: path.join(dir, 'hung.sock'), pods: [], faults: [{ method: 'Version', delayMs: 60_000 }] });
    config = path.join(dir, 'crictl-timeout.yaml');
    writeFileSync(config, `runtime-endpoint: ${sim.endpoint}\ntimeout: 1\n`);
  });
  afterAll(async () => {
    await sim?.close();
  });

  const waited = (run: Run): string | undefined => /Version: DeadlineExceeded: no answer within ([\d.]+m?s)/.exec(run.stderr)?.[1];

  it('crictl.yaml gives the runtime and its timeout (seconds) when nothing else does', async () => {
    const run = await podctl(['version'], { PODCTL_CRICTL_CONFIG: config });
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(waited(run)).toBe('1s');
  });

  it("crictl's own $CRI_CONFIG_FILE names the file too", async () => {
    const run = await podctl(['version'], { PODCTL_CRICTL_CONFIG: '', CRI_CONFIG_FILE: config });
    expect(waited(run)).toBe('1s');
  });

  it('$PODCTL_REQUEST_TIMEOUT beats the file; the flag beats both, as --timeout or --request-timeout', async () => {
    const [env, timeout, requestTimeout] = await Promise.all([
      podctl(['version'], { PODCTL_CRICTL_CONFIG: config, PODCTL_REQUEST_TIMEOUT: '2' }),
      podctl(['version', '--timeout', '1500ms'], { PODCTL_CRICTL_CONFIG: config, PODCTL_REQUEST_TIMEOUT: '2' }),
      podctl(['version', '--request-timeout=1.2'], { PODCTL_CRICTL_CONFIG: config, PODCTL_REQUEST_TIMEOUT: '2' }),
    ]);
    expect(waited(env), env.stderr).toBe('2s');
    expect(waited(timeout), timeout.stderr).toBe('1.5s');
    expect(waited(requestTimeout), requestTimeout.stderr).toBe('1.2s');
  });

  it('a bad duration is a usage error naming the flag', async () => {
    const run = await podctl(['status', '--timeout', 'soon']);
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain('--request-timeout: "soon" is not a duration');
  });

  it('a crictl.yaml timeout that is not whole seconds is one line naming the file', async () => {
    const bad = path.join(dir, 'crictl-bad.yaml');
    writeFileSync(bad, `runtime-endpoint: ${sim!.endpoint}\ntimeout: 2s\n`);
    const run = await podctl(['status'], { PODCTL_CRICTL_CONFIG: bad });
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split('\n')).toEqual([`error: timeout in ${bad}: "2s" is not a whole number of seconds (crictl's timeout: 2 is 2s); fix it, or pass --request-timeout`]);
  });
});

describe('which flag is the request deadline (in-process)', () => {
  const session = () => new FakeSession([{ namespace: 'web', name: 'api', grace: 5 }]);

  it('status takes --timeout (crictl) and --request-timeout as the deadline of each CRI request', async () => {
    for (const args of [['--timeout', '3s'], ['--request-timeout', '3s'], ['--request-timeout=3']]) {
      const run = await runCommand(Status, [...args], session());
      expect(run.exitCode, `${args.join(' ')}: ${run.stderr}`).toBe(0);
      expect(run.sessionOptions?.rpcTimeoutMs, args.join(' ')).toBe(3000);
    }
    const none = await runCommand(Status, [], session());
    expect(none.sessionOptions?.rpcTimeoutMs).toBeUndefined();
  });

  it('every command that talks to the runtime has --request-timeout; --timeout is the same unless the command has its own', () => {
    const aliasesOf = (command: { baseFlags?: Record<string, unknown> }) => (command.baseFlags?.['request-timeout'] as { aliases?: string[] } | undefined)?.aliases ?? [];
    for (const command of [Status, Watch, SyncKnown, Version, Agent]) {
      expect(command.baseFlags, command.name).toHaveProperty('request-timeout');
      expect(aliasesOf(command), command.name).toEqual(['timeout']);
      expect(command.flags, command.name).not.toHaveProperty('timeout');
    }
    for (const command of [Kill, Evict, Drain]) {
      expect(command.baseFlags, command.name).toHaveProperty('request-timeout');
      expect(aliasesOf(command), command.name).toEqual([]);
      expect(command.flags, command.name).toHaveProperty('timeout');
    }
  });

  it('$PODCTL_REQUEST_TIMEOUT is the flag\'s default; 0 means "not set"', async () => {
    const env = await runCommand(Status, [], session(), { PODCTL_REQUEST_TIMEOUT: '7' });
    expect(env.sessionOptions?.rpcTimeoutMs).toBe(7000);
    const zero = await runCommand(Status, ['--timeout', '0'], session());
    expect(zero.sessionOptions?.rpcTimeoutMs).toBeUndefined();
  });

  it('kill keeps --timeout as its wait; its request deadline is --request-timeout, passed on to a background driver', async () => {
    const wait = await runCommand(Kill, ['web/api', '--timeout', '1s', '--yes'], session());
    expect(wait.sessionOptions?.rpcTimeoutMs).toBeUndefined();
    const rpc = await runCommand(Kill, ['web/api', '--request-timeout', '2s', '--no-wait', '--yes'], session());
    expect(rpc.sessionOptions?.rpcTimeoutMs).toBe(2000);
    expect(rpc.handOffs, rpc.stderr).toHaveLength(1);
    expect(rpc.handOffs[0]?.requestTimeoutMs).toBe(2000);
    expect(handOffArgs({ uids: ['u'], stateDir: '/s', requestTimeoutMs: 2000 })).toEqual(expect.arrayContaining(['--request-timeout', '2000ms']));
    expect(handOffArgs({ uids: ['u'], stateDir: '/s' })).not.toContain('--request-timeout');
  });
});
