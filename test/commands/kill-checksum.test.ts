/**
 * The checksum of a kill's write-ahead checkpoint (SHA-256 through WebAssembly, src/lib/sha256.ts):
 * its module is compiled off the main thread while the session opens (`WebAssembly.compile`), not
 * synchronously (`new WebAssembly.Module`) on the path from the runtime's listing to the first
 * stop; the checkpoints it writes read back as sound. A probe preloaded with `-r` records the calls.
 * Needs `npm run build` first.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import { requireBuilt, runPodctl } from '../support/cli.js';

const ROOT = process.cwd();
const BIN = path.join(ROOT, 'bin', 'run.js');

let sim: RunningSimulator;
let dir: string;
let probe: string;

function podctlProbed(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['-r', probe, BIN, ...args],
      { cwd: ROOT, env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '', CONTAINER_RUNTIME_ENDPOINT: '' }, timeout: 60_000 },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

beforeAll(async () => {
  requireBuilt('kill');
  dir = mkdtempSync(path.join(tmpdir(), 'podctl-kill-checksum-'));
  probe = path.join(dir, 'probe.cjs');
  writeFileSync(
    probe,
    [
      'const W = globalThis.WebAssembly;',
      "W.Module = new Proxy(W.Module, { construct(target, args, newTarget) { process.stderr.write('probe: new WebAssembly.Module\\n'); return Reflect.construct(target, args, newTarget); } });",
      'const compile = W.compile;',
      "W.compile = function () { process.stderr.write('probe: WebAssembly.compile\\n'); return compile.apply(W, arguments); };",
    ].join('\n'),
  );
  // Version held back 300 ms: the compile, started before the session opens, has long ended when
  // the write-ahead needs the checksum, however loaded the machine
  sim = await startSimulator({
    socketPath: path.join(dir, 'cri.sock'),
    timeScale: 0.05,
    pods: [{ name: 'web-1', namespace: 'web', terminationGracePeriodSeconds: 30, containers: [{ name: 'c', onSigterm: 'exit' }] }],
    faults: [{ method: 'Version', delayMs: 300, proceed: true }],
  });
});
afterAll(async () => {
  await sim?.close();
});

describe('podctl kill', { timeout: 60_000 }, () => {
  it("compiles the checksum's module off the main thread, and its checkpoints read back sound", async () => {
    const common = ['--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state')];
    const run = await podctlProbed(['kill', 'web/web-1', '--json', ...common]);
    expect(run.code, run.stderr).toBe(0);
    expect((JSON.parse(run.stdout) as { pods: { outcome: string }[] }).pods).toEqual([expect.objectContaining({ outcome: 'terminated' })]);
    const calls = run.stderr.split('\n').filter((l) => l.startsWith('probe: '));
    expect(calls).toEqual(['probe: WebAssembly.compile']);
    // the checkpoint (its checksum checked on read) says the pod finished; nothing was quarantined
    const status = await runPodctl(['status', 'web/web-1', '-o', 'json', ...common]);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stderr).not.toMatch(/quarantin|checksum|damaged/i);
    expect((JSON.parse(status.stdout) as { pods: { state: string }[] }).pods).toEqual([expect.objectContaining({ state: 'finished' })]);
  });
});
