/**
 * The README matches the CLI: every podctl command it shows in a shell block runs as printed against
 * the embedded simulator (a node seeded with the pods it names), and every flag it shows, in a
 * block or inline, is one that command's --help lists. Needs `npm run build` first.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';

const ROOT = process.cwd();
const BIN = path.join(ROOT, 'bin', 'run.js');
const README = readFileSync(path.join(ROOT, 'README.md'), 'utf8');

function podctl(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: ROOT, env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '', CONTAINER_RUNTIME_ENDPOINT: '' }, timeout: 60_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

/** A command line as a shell splits it (single and double quotes), without its trailing comment. */
function words(line: string): string[] {
  const out: string[] = [];
  for (const m of line.matchAll(/'([^']*)'|"([^"]*)"|(#.*$)|(\S+)/g)) {
    if (m[3] !== undefined) break;
    out.push(m[1] ?? m[2] ?? m[4]!);
  }
  return out;
}

/** The podctl command lines of the README's shell blocks, in order. */
function blockCommands(): string[][] {
  const out: string[][] = [];
  for (const block of README.matchAll(/```sh\n([\s\S]*?)```/g)) {
    for (const line of block[1]!.split('\n')) if (line.startsWith('podctl ')) out.push(words(line).slice(1));
  }
  return out;
}

/** Every podctl command the README shows, in blocks and inline (`podctl status -w`). */
function allCommands(): string[][] {
  const inline = [...README.matchAll(/`podctl ([^`]+)`/g)].map((m) => words(m[1]!));
  return [...blockCommands(), ...inline];
}

const flagsOf = (args: string[]): string[] => args.filter((a) => /^--?[a-z]/.test(a)).map((a) => a.split('=')[0]!);

beforeAll(() => {
  if (!existsSync(path.join(ROOT, 'dist', 'commands', 'kill.js'))) throw new Error('dist/ is missing: run `npm run build` before the CLI tests');
});

describe('the README matches the CLI', { timeout: 180_000 }, () => {
  let sim: RunningSimulator;
  let common: string[];

  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'podctl-readme-'));
    const pod = (namespace: string, name: string, labels: Record<string, string> = {}) => ({
      name,
      namespace,
      labels,
      terminationGracePeriodSeconds: 30,
      containers: [{ name: 'c', onSigterm: 'exit' as const }],
    });
    sim = await startSimulator({
      socketPath: path.join(dir, 'cri.sock'),
      timeScale: 0.02,
      pods: [pod('web', 'frontend-1a2b3'), pod('web', 'api-7c9d2', { app: 'api' }), pod('web', 'api-0b1c2', { app: 'api' }), pod('batch', 'report-7f3c1')],
    });
    common = ['--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state')];
  });

  afterAll(async () => {
    await sim?.close();
  });

  it('says nothing the CLI does not do: no "no shell completion", and autocomplete exists', async () => {
    expect(README).not.toMatch(/no shell completion/i);
    expect((await podctl(['autocomplete', '--help'])).code).toBe(0);
  });

  it('every flag it shows is in that command’s --help', async () => {
    const commands = allCommands();
    expect(commands.length).toBeGreaterThan(15);
    const helps = new Map<string, string>();
    for (const args of commands) {
      const id = args[0]!;
      if (!helps.has(id)) {
        const help = await podctl([id, '--help']);
        expect(help.code, `podctl ${id} --help`).toBe(0);
        helps.set(id, help.stdout);
      }
      for (const flag of flagsOf(args)) expect(helps.get(id), `podctl ${args.join(' ')}: ${flag}`).toMatch(new RegExp(`(^|[\\s,\\[])${flag}([\\s=,\\]]|$)`, 'm'));
    }
  });

  it('every command of its shell blocks runs as printed against the simulator', async () => {
    const commands = blockCommands();
    expect(commands.map((c) => c[0])).toEqual(expect.arrayContaining(['version', 'kill', 'evict', 'drain', 'status', 'sync-known']));
    for (const args of commands) {
      const run = await podctl([...args, ...common]);
      expect(run.code, `podctl ${args.join(' ')}\n${run.stderr}`).toBe(0);
      expect(run.stderr, `podctl ${args.join(' ')}`).not.toMatch(/^error:/m);
    }
  });
});
