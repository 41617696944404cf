/**
 * Help and discovery in the built CLI (`node bin/run.js`): `-h` everywhere, `podctl help COMMAND`
 * (@oclif/plugin-help), "did you mean" for a mistyped command (@oclif/plugin-not-found at a terminal,
 * one line and exit 2 elsewhere), and bash/zsh completion generated from the command manifest
 * (@oclif/plugin-autocomplete), exercised in a real bash.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, runPodctl as podctl, BIN } from '../support/cli.js';

const has = (tool: string): boolean => {
  try {
    execFileSync(tool, ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

beforeAll(() => {
  if (!existsSync(path.join(ROOT, 'dist', 'podctl.cjs'))) throw new Error('dist/ is missing: run `npm run build` first');
});

describe('help', { timeout: 60_000 }, () => {
  it('podctl -h lists every command, help and autocomplete included', async () => {
    const run = await podctl(['-h']);
    expect(run.code, run.stderr).toBe(0);
    for (const id of ['kill', 'status', 'drain', 'sync-known', 'watch', 'version', 'help', 'autocomplete']) expect(run.stdout).toMatch(new RegExp(`^  ${id} `, 'm'));
    expect(run.stdout).not.toMatch(/^ {2}autocomplete script/m); // hidden, as in the plugin
  });

  it('podctl help kill, podctl kill -h and podctl kill --help print the same page', async () => {
    const [viaHelp, viaShort, viaLong] = await Promise.all([podctl(['help', 'kill']), podctl(['kill', '-h']), podctl(['kill', '--help'])]);
    expect(viaHelp.code, viaHelp.stderr).toBe(0);
    expect(viaHelp.stdout).toContain('USAGE\n  $ podctl kill');
    expect(viaHelp.stdout).toContain('Exit codes:');
    expect(viaShort.stdout).toBe(viaHelp.stdout);
    expect(viaLong.stdout).toBe(viaHelp.stdout);
  });

  it('podctl help for a command that does not exist is a usage error', async () => {
    const run = await podctl(['help', 'stauts']);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
  });
});

describe('did you mean', { timeout: 60_000 }, () => {
  it('without a terminal: one line naming the closest command, exit 2, nothing run', async () => {
    const run = await podctl(['stauts', '-A']);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe('error: unknown command "stauts"; did you mean "podctl status"? (podctl help lists the commands)\n');
    const prefix = await podctl(['sync']);
    expect(prefix.stderr).toContain('did you mean "podctl sync-known"?');
  });

  it('a word close to no command gets no suggestion', async () => {
    const run = await podctl(['frobnicate']);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe('error: unknown command "frobnicate" (podctl help lists the commands)\n');
  });

  /** Runs podctl on a pseudo-terminal (`script`), answering the plugin's question once it is asked. */
  const onTerminal = (args: string[], answer: string): Promise<{ code: number; output: string }> =>
    new Promise((resolve) => {
      const command = [process.execPath, BIN, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
      const child = execFile('script', ['-qec', command, '/dev/null'], { env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '' }, timeout: 45_000 }, (error, stdout) =>
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, output: stdout }),
      );
      let asked = false;
      child.stdout?.on('data', (chunk: Buffer) => {
        if (asked || !chunk.toString().includes('Did you mean')) return;
        asked = true;
        child.stdin?.write(answer);
      });
    });

  it.skipIf(!has('script'))('at a terminal: the plugin asks; yes runs the suggestion with the same arguments', async () => {
    const run = await onTerminal(['vershun', '--client'], 'y\r');
    expect(run.output).toContain('vershun is not a podctl command');
    expect(run.output).toMatch(/Did you mean .*version/);
    expect(run.output).toContain(`node: ${process.version}`);
    expect(run.code).toBe(0);
  });

  it.skipIf(!has('script'))('at a terminal: no runs nothing, exit 2', async () => {
    const run = await onTerminal(['vershun', '--client'], 'n\r');
    expect(run.output).toMatch(/Did you mean .*version/);
    expect(run.output).not.toContain('node: v');
    expect(run.output).toContain('error: unknown command "vershun" (podctl help lists the commands)');
    expect(run.code).toBe(2);
  });
});

describe('shell completion', { timeout: 60_000 }, () => {
  let cache = '';
  beforeAll(() => {
    cache = mkdtempSync(path.join(tmpdir(), 'podctl-completion-'));
  });
  afterAll(() => rmSync(cache, { recursive: true, force: true }));

  it('autocomplete bash writes completion functions generated from the commands, and says how to load them', async () => {
    const run = await podctl(['autocomplete', 'bash'], { XDG_CACHE_HOME: cache });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('printf "$(podctl autocomplete script bash)" >> ~/.bashrc');
    const functions = readFileSync(path.join(cache, 'podctl', 'autocomplete', 'functions', 'bash', 'podctl.bash'), 'utf8');
    // every command with its flags, from the manifest
    expect(functions).toMatch(/^kill .*--selector/m);
    expect(functions).toMatch(/^kill .*--grace/m);
    expect(functions).toMatch(/^status .*--output/m);
    const script = await podctl(['autocomplete', 'script', 'bash'], { XDG_CACHE_HOME: cache });
    expect(script.stdout).toContain(`PODCTL_AC_BASH_SETUP_PATH=${path.join(cache, 'podctl', 'autocomplete', 'bash_setup')}`);
  });

  it.skipIf(!has('bash'))('bash completes command names and flags with the generated functions', async () => {
    await podctl(['autocomplete', 'bash', '--refresh-cache'], { XDG_CACHE_HOME: cache });
    const complete = (line: string): string => {
      const words = line.split(' ');
      const program = [
        `source ${path.join(cache, 'podctl', 'autocomplete', 'bash_setup')}`,
        `COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; COMP_LINE='${line}'`,
        '_podctl_autocomplete',
        'echo "${COMPREPLY[*]}"',
      ].join('\n');
      return execFileSync('bash', ['-c', program], { encoding: 'utf8' }).trim();
    };
    expect(complete('podctl sta')).toBe('status');
    expect(complete('podctl sync')).toBe('sync-known');
    expect(complete('podctl kill --gr')).toBe('--grace');
    expect(complete('podctl status --no-h')).toBe('--no-headers');
  });

  it('autocomplete zsh writes a compdef function naming the commands with their summaries', async () => {
    const run = await podctl(['autocomplete', 'zsh'], { XDG_CACHE_HOME: cache });
    expect(run.code, run.stderr).toBe(0);
    const zsh = readFileSync(path.join(cache, 'podctl', 'autocomplete', 'functions', 'zsh', '_podctl'), 'utf8');
    expect(zsh.split('\n')[0]).toBe('#compdef podctl');
    expect(zsh).toContain('"kill[Terminate pods with the kubelet\'s grace semantics and wait for them.]"');
    expect(zsh).toContain('--grace');
  });
});
