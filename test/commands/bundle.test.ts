/**
 * The bundled build (scripts/build.mjs) in child processes: the packages the commands load lazily
 * still work through it (YAML output, the wide table), `status` renders the same pods in every
 * format, and it reads through a read-only session (no ContainerStatus calls, no event stream).
 * Needs `npm run build` first.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoNode, startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';

const ROOT = process.cwd();
const BIN = path.join(ROOT, 'bin', 'run.js');

function podctl(args: string[], nodeFlags: string[] = []): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...nodeFlags, BIN, ...args],
      { cwd: ROOT, env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '', CONTAINER_RUNTIME_ENDPOINT: '' }, timeout: 60_000 },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

let sim: RunningSimulator;
let common: string[];

beforeAll(async () => {
  if (!existsSync(path.join(ROOT, 'dist', 'cli.js'))) throw new Error('dist/ is missing: run `npm run build` first');
  const dir = mkdtempSync(path.join(tmpdir(), 'podctl-bundle-'));
  sim = await startSimulator({ socketPath: path.join(dir, 'cri.sock'), pods: demoNode(12) });
  common = ['--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state')];
});
afterAll(async () => {
  await sim?.close();
});

describe('the bundled CLI', { timeout: 60_000 }, () => {
  it('status shows the same pods as a table, as JSON and as YAML', async () => {
    const [table, json, yaml] = await Promise.all([podctl(['status', ...common]), podctl(['status', '-o', 'json', ...common]), podctl(['status', '-o', 'yaml', ...common])]);
    for (const run of [table, json, yaml]) expect(run.code, run.stderr).toBe(0);
    const fromJson = (JSON.parse(json.stdout) as { pods: { namespace: string; name: string }[] }).pods.map((p) => `${p.namespace}/${p.name}`);
    const fromYaml = (parse(yaml.stdout) as { pods: { namespace: string; name: string }[] }).pods.map((p) => `${p.namespace}/${p.name}`);
    const fromTable = table.stdout
      .trim()
      .split('\n')
      .slice(1)
      .map((line) => line.split(/\s+/)[0]);
    expect(fromJson).toHaveLength(12);
    expect(fromYaml).toEqual(fromJson);
    expect(fromTable).toEqual(fromJson);
  });

  it('status -o wide aligns every column under its heading', async () => {
    const run = await podctl(['status', '-o', 'wide', ...common]);
    expect(run.code, run.stderr).toBe(0);
    const [head, ...rows] = run.stdout.trimEnd().split('\n');
    const at = head!.indexOf('PRIORITY');
    expect(at).toBeGreaterThan(0);
    for (const row of rows) expect(row.slice(at - 2, at), row).toBe('  ');
  });

  it('status lists the runtime with ListPodSandbox and ListContainers only: no ContainerStatus, no event stream', async () => {
    const before = sim.state.journal().length;
    expect((await podctl(['status', ...common])).code).toBe(0);
    const methods = new Set(
      sim.state
        .journal()
        .slice(before)
        .flatMap((r) => (r.kind === 'rpc' ? [r.method] : [])),
    );
    expect([...methods].sort()).toEqual(['ListContainers', 'ListPodSandbox', 'Version']);
  });

  it("status of a pod loads none of Node's modules it has no use for, and builds no ICU collator", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'podctl-bundle-probe-'));
    const [probe, record] = [path.join(dir, 'probe.cjs'), path.join(dir, 'record.json')];
    // what the process loaded, and how often it compared strings by locale (oclif's command sort did)
    writeFileSync(
      probe,
      `let compares = 0;
       const localeCompare = String.prototype.localeCompare;
       String.prototype.localeCompare = function (...args) { compares += 1; return localeCompare.apply(this, args); };
       process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(record)}, JSON.stringify({ compares, modules: process.moduleLoadList })));`,
    );
    const listed = JSON.parse((await podctl(['status', '-o', 'json', ...common])).stdout) as { pods: { namespace: string; name: string }[] };
    const pod = listed.pods[0]!;
    const run = await podctl(['status', `${pod.namespace}/${pod.name}`, ...common], ['-r', probe]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(pod.name);
    const { compares, modules } = JSON.parse(readFileSync(record, 'utf8')) as { compares: number; modules: string[] };
    expect(modules).toContain('NativeModule net');
    expect(modules.filter((m) => /^NativeModule (child_process|dgram|readline)/.test(m))).toEqual([]);
    expect(compares).toBe(0);
  });

  it('the script bin/run.js compiles is ASCII only (V8 keeps it one byte a character, read from UTF-8 on the fast path)', () => {
    const script = readFileSync(path.join(ROOT, 'dist', 'podctl.cjs'));
    expect(script.length).toBeGreaterThan(100_000);
    expect(script.findIndex((byte) => byte > 0x7f)).toBe(-1);
  });
});
