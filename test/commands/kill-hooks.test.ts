/**
 * The built CLI's `kill --json` against the embedded simulator: every preStop hook's outcome in the
 * result, and a warning for a hook that failed or could not run.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';

const ROOT = process.cwd();
const BIN = path.join(ROOT, 'bin', 'run.js');

function podctl(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: ROOT, env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '', CONTAINER_RUNTIME_ENDPOINT: '' }, timeout: 60_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

describe('kill --json reports preStop hooks', { timeout: 60_000 }, () => {
  let sim: RunningSimulator;
  let server: http.Server;
  let common: string[];
  const hits: string[] = [];

  beforeAll(async () => {
    if (!existsSync(path.join(ROOT, 'dist', 'commands', 'kill.js'))) throw new Error('dist/ is missing: run `npm run build` first');
    server = http.createServer((req, res) => {
      hits.push(req.url ?? '');
      res.writeHead(req.url === '/broken' ? 503 : 200).end(req.url === '/broken' ? 'not ready' : 'ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const dir = mkdtempSync(path.join(tmpdir(), 'podctl-cli-hooks-'));
    sim = await startSimulator({
      socketPath: path.join(dir, 'cri.sock'),
      timeScale: 0.05,
      pods: [
        {
          name: 'shop',
          namespace: 'web',
          hostNetwork: true,
          containers: [
            { name: 'app', preStop: { httpGet: { path: '/drain', port } } },
            { name: 'cache', preStop: { httpGet: { path: '/broken', port } } },
            { name: 'log', preStop: { exec: { command: ['sh', '-c', 'true'] } } },
          ],
        },
      ],
    });
    common = ['--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state')];
  });
  afterAll(async () => {
    await sim?.close();
    await new Promise((r) => server?.close(r));
  });

  it('each hook with its type and outcome; the failed one is a warning, on stderr too', async () => {
    const run = await podctl(['kill', 'web/shop', '--grace', '5', '--json', ...common]);
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout) as { hooks: { container: string; type: string; outcome: string; ms: number; pod: string }[]; warnings: string[] };
    const byContainer = Object.fromEntries(result.hooks.map((h) => [h.container, h]));
    expect(byContainer.app).toMatchObject({ pod: 'web/shop', type: 'httpGet', outcome: 'succeeded' });
    expect(byContainer.cache).toMatchObject({ type: 'httpGet', outcome: 'failed' });
    expect(byContainer.log).toMatchObject({ type: 'exec', outcome: 'succeeded' });
    expect(result.hooks.every((h) => Number.isInteger(h.ms) && h.ms >= 0)).toBe(true);
    expect(hits.sort()).toEqual(['/broken', '/drain']);
    expect(result.warnings).toEqual([expect.stringMatching(/^preStop httpGet hook of web\/shop container cache failed: GET http:\/\/127\.0\.0\.1:\d+\/broken answered 503: not ready$/)]);
    // said once, as it happened, with its pod (the result repeats it as a warning, not on stderr)
    expect(run.stderr).toContain('preStop httpGet hook of web/shop container cache failed');
    expect(run.stderr.split('/broken answered 503')).toHaveLength(2);
  });
});
