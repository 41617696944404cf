/**
 * The single executable's podctl is a script it carries (podctl.cjs), compiled at start with the V8
 * code cache trained at build time on the command that runs (src/sea-main.ts, scripts/sea.mjs).
 * Through the commands a user types, against the embedded simulator: `status` and `kill` start from
 * their own trained caches, a command that was not trained and `--help` from the common one, and an
 * executable whose `status` cache V8 rejects (its version field damaged) still runs `status`, from
 * source. NODE_DEBUG=podctl-sea says which cache compiled the script and whether V8 accepted it.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import { REPO_ROOT, createSeaHost, removeSeaHost, runSea, seaSkipReason, warnIfSeaSkipped, type SeaHost } from './support.js';

warnIfSeaSkipped('test/sea/trained-cache.test.ts');
const skip = seaSkipReason !== undefined;
const DEBUG = { NODE_DEBUG: 'podctl-sea' };

/** The debug line of podctl.cjs's compile: which cache, and V8's verdict. */
function podctlCache(stderr: string): string | undefined {
  return /podctl\.cjs: code cache (\S+ \S+)/.exec(stderr)?.[1];
}

/**
 * Damages the `cache` asset of the host's executable: another V8 version hash (bytes 4-7 of V8's
 * code cache header), which V8 rejects.
 */
function rejectCache(host: SeaHost, cache: string): void {
  const asset = path.join(REPO_ROOT, 'dist', 'sea', 'assets', cache);
  if (!existsSync(asset)) throw new Error(`${asset} is missing: build the executable with \`npm run sea\``);
  const exe = readFileSync(host.exe);
  const at = exe.indexOf(readFileSync(asset).subarray(0, 64));
  expect(at, `${cache} is not carried verbatim by the executable`).toBeGreaterThan(0);
  exe.writeUInt32LE(exe.readUInt32LE(at + 4) ^ 0xffffffff, at + 4);
  writeFileSync(host.exe, exe);
}

describe.skipIf(skip)(`the single executable's trained code caches${skip ? ` (SKIPPED: ${seaSkipReason})` : ''}`, { timeout: 120_000 }, () => {
  let host: SeaHost;
  let sim: RunningSimulator;
  let dir: string;
  let common: string[];

  beforeAll(async () => {
    host = createSeaHost();
    dir = mkdtempSync(path.join(tmpdir(), 'podctl-sea-cache-'));
    const pods = ['web-1', 'web-2', 'web-3'].map((name) => ({ name, namespace: 'web', uid: `uid-${name}` }));
    sim = await startSimulator({ socketPath: path.join(dir, 'cri.sock'), pods });
    common = ['--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state'), '--no-color'];
  });

  afterAll(async () => {
    await sim?.close();
    removeSeaHost(host);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('status starts from the cache trained on status and lists the pods', async () => {
    const run = await runSea(host, ['status', ...common], { env: DEBUG });
    expect(run.code, run.stderr).toBe(0);
    expect(podctlCache(run.stderr)).toBe('podctl-status.v8 accepted');
    expect(run.stdout).toMatch(/^web\/web-1\s/m);
    expect(run.stdout).toMatch(/^web\/web-3\s/m);
  });

  it('kill starts from the cache trained on kill and terminates the pod', async () => {
    const run = await runSea(host, ['kill', 'web/web-2', '--grace', '1', '--json', ...common], { env: DEBUG });
    expect(run.code, run.stderr).toBe(0);
    expect(podctlCache(run.stderr)).toBe('podctl-kill.v8 accepted');
    const result = JSON.parse(run.stdout) as { status: string; pods: { uid: string; outcome: string }[] };
    expect(result.pods).toEqual([expect.objectContaining({ uid: 'uid-web-2', outcome: 'terminated' })]);
  });

  it("evict starts from kill's trained cache (the same path) and evicts the pod", async () => {
    const run = await runSea(host, ['evict', 'web/web-3', '--grace', '1', '--json', ...common], { env: DEBUG });
    expect(run.code, run.stderr).toBe(0);
    expect(podctlCache(run.stderr)).toBe('podctl-kill.v8 accepted');
    const result = JSON.parse(run.stdout) as { pods: { uid: string; outcome: string }[] };
    expect(result.pods).toEqual([expect.objectContaining({ uid: 'uid-web-3' })]);
  });

  it('a command that was not trained (version) and --help start from the common cache', async () => {
    const version = await runSea(host, ['version', '--json', ...common], { env: DEBUG });
    expect(version.code, version.stderr).toBe(0);
    expect(podctlCache(version.stderr)).toBe('podctl.v8 accepted');
    expect(JSON.parse(version.stdout)).toMatchObject({ singleExecutable: true, runtime: { endpoint: sim.endpoint } });
    const help = await runSea(host, ['--help'], { env: DEBUG });
    expect(help.code, help.stderr).toBe(0);
    expect(podctlCache(help.stderr)).toBe('podctl.v8 accepted');
    expect(help.stdout).toMatch(/^\s+status\s/m);
  });

  it('a cache V8 rejects: status compiles from source and lists the pods', async () => {
    const damaged = createSeaHost();
    try {
      rejectCache(damaged, 'podctl-status.v8');
      const run = await runSea(damaged, ['status', ...common], { env: DEBUG });
      expect(run.code, run.stderr).toBe(0);
      expect(podctlCache(run.stderr)).toBe('podctl-status.v8 rejected');
      expect(run.stdout).toMatch(/^web\/web-1\s/m);
    } finally {
      removeSeaHost(damaged);
    }
  });
});
