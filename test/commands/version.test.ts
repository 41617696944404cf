/**
 * `podctl version` from an npm install (`node bin/run.js`): podctl's version, the Node.js running it,
 * and the runtime's name and version from its Version call (the embedded CRI simulator here; the
 * real containerd in test/sea/executable.test.ts); --client asks no runtime; bin/run.js run as an
 * executable gives node podctl's flags; an unreachable runtime is one line and exit 1.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import { versionLines } from '../../src/services/runtime/version.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const VERSION = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

/**
 * `node bin/run.js …`, or with `asExecutable` bin/run.js itself as the npm install's `podctl` runs
 * it: its first line's `env -S node …` finds the node first on the PATH, the one running this test.
 */
function podctl(args: string[], options: { asExecutable?: boolean } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const launcher = path.join(ROOT, 'bin', 'run.js');
  const [file, argv] = options.asExecutable ? [launcher, args] : [process.execPath, [launcher, ...args]];
  const env = { ...process.env, NO_COLOR: '1', ...(options.asExecutable ? { PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ''}` } : {}) };
  return new Promise((resolve) => {
    execFile(file, argv, { cwd: ROOT, env, timeout: 30_000 }, (error, stdout, stderr) => resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }));
  });
}

describe('podctl version', () => {
  let dir = '';
  let sim: RunningSimulator | undefined;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'podctl-version-'));
    sim = await startSimulator({ socketPath: path.join(dir, 'cri.sock'), pods: [] });
  });
  afterAll(async () => {
    await sim?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('names podctl, the Node.js running it, and the runtime as its Version call reports it', async () => {
    const run = await podctl(['version', '--json', '--runtime-endpoint', sim!.endpoint, '--state-dir', path.join(dir, 'state')]);
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout);
    expect(result).toEqual({
      podctl: VERSION,
      node: process.version,
      nodeFlags: [],
      singleExecutable: false,
      runtime: { endpoint: sim!.endpoint, name: 'podctl-simulator', version: '0.1.0', apiVersion: 'v1' },
    });
    const text = await podctl(['version', '--runtime-endpoint', sim!.endpoint, '--state-dir', path.join(dir, 'state')]);
    expect(text.stdout.trim().split('\n')).toEqual(versionLines(result));
    expect(text.stdout).toContain(`runtime: podctl-simulator 0.1.0 (CRI v1, ${sim!.endpoint})`);
  });

  it('--client asks no runtime (none is reachable)', async () => {
    const run = await podctl(['version', '--client', '--runtime-endpoint', `unix://${path.join(dir, 'none.sock')}`]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim().split('\n')).toEqual([`podctl: ${VERSION}`, `node: ${process.version}`]);
  });

  it("run as the npm install's `podctl` (bin/run.js itself, found on the PATH), node gets podctl's flags: a young generation of 2 × 4 MB", async () => {
    const run = await podctl(['version', '--client'], { asExecutable: true });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim().split('\n')).toEqual([`podctl: ${VERSION}`, `node: ${process.version} (--max-semi-space-size=4)`]);
  });

  it('an unreachable runtime is one line on stderr, exit 1', async () => {
    const run = await podctl(['version', '--runtime-endpoint', `unix://${path.join(dir, 'none.sock')}`, '--state-dir', path.join(dir, 'state')]);
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/^error: runtime version: .*none\.sock/);
  });
});
