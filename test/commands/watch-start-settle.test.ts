/**
 * The built `podctl watch` at rest after its start: the garbage of its start (the first listing, the
 * modules loaded) is collected once start-up is over, as after a drain (lib/heap-settle.ts), not left
 * to V8's memory reducer, which collects it at a time of its own some 20-30 s later, inside what
 * should be the follower's idle. Seen through V8's GC trace: a collection podctl asks for is traced
 * with the reason "testing". Skipped when not built.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import { until, waitFor } from '../support/wait.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const built = existsSync(join(root, 'dist/commands/watch.js')) && existsSync(join(root, 'oclif.manifest.json'));
if (!built) console.warn('[watch-start-settle] SKIPPED: podctl is not built (run `npm run build`)');

describe.skipIf(!built)(`podctl watch after its start${built ? '' : ' (skipped: not built)'}`, () => {
  let dir = '';
  let sim: RunningSimulator | undefined;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'podctl-watch-settle-'));
    sim = await startSimulator({
      socketPath: join(dir, 'sim.sock'),
      pods: [
        { name: 'api-1', namespace: 'web' },
        { name: 'report', namespace: 'batch' },
      ],
    });
  });

  afterAll(async () => {
    await sim?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('collects its start-up garbage once start-up is over, with nothing changing on the node', async () => {
    // bin/run.js's flags (without --expose-gc: podctl gets V8's gc at run time), and V8's trace of
    // every collection on stdout
    const flags = readFileSync(join(root, 'bin', 'run.js'), 'utf8')
      .split('\n', 1)[0]!
      .split(' ')
      .slice(3);
    expect(flags).not.toContain('--expose-gc');
    const child = spawn(process.execPath, [...flags, '--trace-gc', 'bin/run.js', 'watch', '-o', 'json', '--runtime-endpoint', sim!.endpoint, '--state-dir', join(dir, 'state')], {
      cwd: root,
      env: { ...process.env, NO_COLOR: '1' },
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    try {
      const records = () => out.split('\n').filter((l) => l.startsWith('{"type":"pod"')).length;
      await until('the pod records', () => records() >= 2, { timeoutMs: 20_000, everyMs: 25 });
      const asked = () => out.split('\n').filter((l) => /Mark-Compact.*testing/.test(l));
      // the settle follows 1 s without a change; bounded well above that for a loaded machine
      const collections = await waitFor('a collection podctl asks for', () => asked().length > 0 && asked(), { timeoutMs: 20_000, everyMs: 25 });
      expect(collections.length).toBeGreaterThan(0);
      // nothing changed on the node: no transition came with it
      expect(out).not.toContain('"type":"transition"');
    } finally {
      child.kill('SIGKILL');
    }
  });
});
