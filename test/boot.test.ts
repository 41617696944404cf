/**
 * src/boot.ts through the built CLI (bin/run.js), in a copy of the build so that no other test's
 * runs write caches into it: a command's first run writes its V8 code cache, later runs keep it (a
 * rejected cache would be rewritten), a damaged cache is replaced and never breaks a command, and
 * `--version`, unknown words and PODCTL_CODE_CACHE=0 write none. Needs `npm run build` first.
 */
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const REPO = process.cwd();
let root: string;

function podctl(args: string[], env: Record<string, string> = {}, nodeFlags: string[] = []): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...nodeFlags, path.join(root, 'bin', 'run.js'), ...args],
      { cwd: root, env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '', CONTAINER_RUNTIME_ENDPOINT: '', PODCTL_CODE_CACHE: '', ...env }, timeout: 60_000 },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

const caches = (): string[] => (existsSync(path.join(root, 'dist', 'cache')) ? readdirSync(path.join(root, 'dist', 'cache')).sort() : []);
/** A kill that fails fast and the same way every time: the runtime socket does not exist. */
const killArgs = (): string[] => ['kill', 'default/web', '--runtime-endpoint', `unix://${path.join(root, 'no-runtime.sock')}`, '--state-dir', path.join(root, 'state')];

beforeEach(() => {
  if (!existsSync(path.join(REPO, 'dist', 'podctl.cjs'))) throw new Error('dist/ is missing: run `npm run build` first');
  root = mkdtempSync(path.join(tmpdir(), 'podctl-boot-'));
  for (const entry of ['bin', 'package.json', 'oclif.manifest.json']) cpSync(path.join(REPO, entry), path.join(root, entry), { recursive: true });
  cpSync(path.join(REPO, 'dist'), path.join(root, 'dist'), { recursive: true, filter: (src) => isBundleFile(path.relative(path.join(REPO, 'dist'), src)) });
  symlinkSync(path.join(REPO, 'node_modules'), path.join(root, 'node_modules'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

/**
 * What bin/run.js loads from dist/: the JavaScript, never the caches, the single executable or the
 * image archive beside it (~170 MB, which `npm test` builds before this runs).
 */
function isBundleFile(relative: string): boolean {
  if (relative === '') return true;
  const top = relative.split(path.sep)[0]!;
  if (top === 'cache' || top === 'sea') return false;
  return relative !== top || /\.(c?js|json)$/.test(top) || statSync(path.join(REPO, 'dist', top)).isDirectory();
}

describe('start-up with a V8 code cache', { timeout: 60_000 }, () => {
  it("a command's first run writes its cache; the next run keeps it and behaves the same", async () => {
    expect(caches()).toEqual([]);
    const first = await podctl(killArgs());
    expect(first.stderr).toMatch(/no-runtime\.sock/);
    expect(first.code).not.toBe(0);
    const written = caches();
    expect(written).toHaveLength(1);
    expect(written[0]).toBe(`kill-${/^kill-([0-9a-f]{16})-/.exec(written[0]!)?.[1]}-${process.versions.v8}.v8`);
    const file = path.join(root, 'dist', 'cache', written[0]!);
    const before = statSync(file);
    expect(before.size).toBeGreaterThan(10_000);

    const second = await podctl(killArgs());
    expect({ code: second.code, stderr: second.stderr }).toEqual({ code: first.code, stderr: first.stderr });
    // accepted by V8 (a rejected cache is written again)
    expect(statSync(file).mtimeMs).toBe(before.mtimeMs);
    expect(caches()).toEqual(written);
  });

  it('the cache name carries the bundle hash, so a rebuilt bundle never reads an older cache', async () => {
    await podctl(killArgs());
    const [name] = caches();
    const boot = readFileSync(path.join(root, 'dist', 'boot.cjs'), 'utf8');
    const hash = /kill-([0-9a-f]{16})-/.exec(name!)![1]!;
    expect(boot).toContain(hash);
  });

  it('a damaged cache is rejected, the command still runs, and the cache is written anew', async () => {
    const clean = await podctl(killArgs());
    const file = path.join(root, 'dist', 'cache', caches()[0]!);
    writeFileSync(file, Buffer.alloc(4096, 7));
    const damaged = await podctl(killArgs());
    expect({ code: damaged.code, stderr: damaged.stderr }).toEqual({ code: clean.code, stderr: clean.stderr });
    const rewritten = readFileSync(file);
    expect(rewritten.equals(Buffer.alloc(4096, 7))).toBe(false);
    expect(rewritten.length).toBeGreaterThan(10_000);
  });

  it('--version, --help, unknown words and PODCTL_CODE_CACHE=0 write no cache', async () => {
    const version = await podctl(['--version']);
    expect(version.code).toBe(0);
    expect(version.stdout).toMatch(/^podctl\/\d+\.\d+\.\d+ /);
    expect((await podctl(['--help'])).code).toBe(0);
    expect((await podctl(['nosuch'])).code).toBe(2);
    const off = await podctl(killArgs(), { PODCTL_CODE_CACHE: '0' });
    expect(off.stderr).toMatch(/no-runtime\.sock/);
    expect(caches()).toEqual([]);
  });

  it('a command runs from the bundle with its cache: `kill --help` and parse errors behave as through oclif', async () => {
    const help = await podctl(['kill', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('USAGE');
    expect(help.stdout).toContain('$ podctl kill');
    const bad = await podctl(['kill', 'default/web', '--grace', 'soon']);
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
  });
});

/** The flags of bin/run.js's first line (`#!/usr/bin/env -S node …`), as `podctl` on a PATH runs with. */
const nodeFlags = (): string[] =>
  readFileSync(path.join(REPO, 'bin', 'run.js'), 'utf8')
    .split('\n', 1)[0]!
    .split(' ')
    .slice(3);
/** V8 12 and later leave the young generation's size out of the flag hash; Node.js 20's V8 11 counts it. */
const nodeMajor = Number(process.versions.node.split('.')[0]);

describe.skipIf(nodeMajor < 24)("bin/run.js's Node.js flags", { timeout: 60_000 }, () => {
  it("keep V8's flag hash: Node.js's own modules compile with the code cache it carries", async () => {
    expect(nodeFlags()).toContain('--max-semi-space-size=4');
    // NODE_DEBUG_NATIVE=CODE_CACHE: Node.js says of each of its modules compiled at run time whether
    // V8 accepted its cache (a flag such as --expose-gc has every one rejected)
    const run = await podctl(['kill', '--help'], { NODE_DEBUG_NATIVE: 'CODE_CACHE' }, nodeFlags());
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/^Code cache of stream \(\w+\) is accepted$/m);
    expect(run.stderr).not.toMatch(/is rejected/);
  });
});
