/**
 * What a `podctl status` run asks of the machine before it answers, seen by a probe preloaded into
 * the process (`-r`): oclif's platform (is-wsl's /proc/version and /run/WSL checks) only when
 * something reads it (`--version`'s user agent), and one connection to an explicit runtime endpoint
 * (the socket that was checked is the one the CRI calls go over). Needs `npm run build`.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';

const ROOT = process.cwd();

/** Records the files read or looked for synchronously, and each unix socket connected to. */
const PROBE = `
const fs = require('node:fs');
const net = require('node:net');
const seen = { files: [], connects: [] };
for (const name of ['readFileSync', 'existsSync']) {
  const real = fs[name];
  fs[name] = function (file, ...rest) { if (typeof file === 'string') seen.files.push(file); return real.call(this, file, ...rest); };
}
for (const name of ['connect', 'createConnection']) {
  const real = net[name];
  net[name] = function (...args) { const o = args[0]; seen.connects.push(typeof o === 'string' ? o : o && o.path); return real.apply(this, args); };
}
process.on('exit', () => fs.writeFileSync(process.env.PROBE_RECORD, JSON.stringify(seen)));
`;

interface Seen {
  files: string[];
  connects: string[];
}

let dir: string;
let probe: string;
let sim: RunningSimulator;

function podctl(args: string[], record: string): Promise<{ code: number; stdout: string; stderr: string; seen: Seen }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['-r', probe, path.join(ROOT, 'bin', 'run.js'), ...args],
      { cwd: ROOT, env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '', CONTAINER_RUNTIME_ENDPOINT: '', PROBE_RECORD: record }, timeout: 60_000 },
      (error, stdout, stderr) =>
        resolve({
          code: error ? (typeof error.code === 'number' ? error.code : 1) : 0,
          stdout,
          stderr,
          seen: existsSync(record) ? (JSON.parse(readFileSync(record, 'utf8')) as Seen) : { files: [], connects: [] },
        }),
    );
  });
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'podctl-status-start-'));
  probe = path.join(dir, 'probe.cjs');
  writeFileSync(probe, PROBE);
  sim = await startSimulator({ socketPath: path.join(dir, 'cri.sock'), pods: 3 });
});
afterAll(async () => {
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

const WSL_CHECKS = /^(\/proc\/version|\/proc\/sys\/fs\/binfmt_misc\/WSLInterop|\/run\/WSL|\/\.dockerenv|\/run\/\.containerenv)$/;

describe.skipIf(!existsSync(path.join(ROOT, 'dist/podctl.cjs')))('podctl status from the start', { timeout: 60_000 }, () => {
  it('lists the runtime without asking whether it runs on WSL; --version still names the platform', async () => {
    const status = await podctl(['status', '--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state')], path.join(dir, 'status.json'));
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout.split('\n').filter((l) => /^\S+\/\S+\s+[0-9a-f]{8}\s/.test(l))).toHaveLength(3);
    expect(status.seen.files.filter((f) => WSL_CHECKS.test(f))).toEqual([]);

    const version = await podctl(['--version'], path.join(dir, 'version.json'));
    expect(version.code, version.stderr).toBe(0);
    expect(version.stdout.trim()).toMatch(new RegExp(`^podctl/\\S+ ${process.platform}-${process.arch} node-${process.version}$`));
    expect(version.seen.files).toContain('/proc/version');
  });

  it('reads a manifest written in ASCII (its other characters escaped), whose help texts print as before', async () => {
    const manifest = readFileSync(path.join(ROOT, 'oclif.manifest.json'), 'utf8');
    expect(manifest.match(/[^\x00-\x7f]/g) ?? []).toEqual([]);
    const help = await podctl(['status', '--help'], path.join(dir, 'help.json'));
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toContain('shouldPodContainersBeTerminating, …)');
  });

  it('connects to an explicit endpoint once: the checked connection carries the calls; a missing socket is still one line, exit 1', async () => {
    const status = await podctl(['status', '--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state')], path.join(dir, 'once.json'));
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout.split('\n').filter((l) => /^\S+\/\S+\s+[0-9a-f]{8}\s/.test(l))).toHaveLength(3);
    expect(status.seen.connects.filter((p) => p === path.join(dir, 'cri.sock'))).toHaveLength(1);

    const missing = path.join(dir, 'missing.sock');
    const gone = await podctl(['status', '--runtime-endpoint', `unix://${missing}`, '--state-dir', path.join(dir, 'state')], path.join(dir, 'missing.json'));
    expect(gone.code).toBe(1);
    expect(gone.stderr.trim()).toBe(`error: runtime endpoint ${missing} (--runtime-endpoint): no such socket; is the runtime running? pass --runtime-endpoint unix:///path/to/cri.sock`);
  });
});
