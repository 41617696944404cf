/**
 * `podctl watch` from the single executable in a real terminal (tmux), on the real containerd test
 * node, with no `node` on PATH: Ink and its layout engine (yoga's WebAssembly) come from inside the
 * executable. Filter to a pod, kill it with a typed grace after confirmation, see it terminate, quit.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeContainerd } from '../e2e/support/env.js';
import { useContainerd } from '../e2e/support/context.js';
import { exitInfo } from '../e2e/support/observe.js';
import { createSeaHost, entries, removeSeaHost, seaEnv, seaSkipReason, warnIfSeaSkipped, type SeaHost } from './support.js';
import { TMUX_SIZES, onOneLine, rowOf, tmuxTerminal } from '../tui/support/tmux.js';

warnIfSeaSkipped('test/sea/watch-tmux.test.ts');
const hasTmux = spawnSync('tmux', ['-V']).status === 0;
const skipReason = seaSkipReason ?? (hasTmux ? undefined : 'tmux is not installed');
if (skipReason && seaSkipReason === undefined) console.warn(`[sea watch-tmux] SKIPPED: ${skipReason}`);

const server = `podctl-sea-watch-${process.pid}`;
const tmux = (...args: string[]) => execFileSync('tmux', ['-L', server, ...args], { encoding: 'utf8' });

const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

describeContainerd(import.meta.url, "the single executable's watch screen against containerd", () => {
  describe.skipIf(skipReason !== undefined)(`podctl-linux-x64 watch in tmux${skipReason ? ` (SKIPPED: ${skipReason})` : ''}`, () => {
    const node = useContainerd();
    let host: SeaHost | undefined;

    beforeAll(() => {
      host = createSeaHost();
    });
    afterAll(() => {
      try {
        tmux('kill-server');
      } catch {
        // already gone
      }
      removeSeaHost(host);
    });

    for (const { cols, rows } of TMUX_SIZES) {
      it(`at ${cols}×${rows}: shows the node's pods, kills the selected one after confirmation, and quits with exit 0`, async () => {
        const h = host!;
        const target = `watch-${cols}`;
        const t = tmuxTerminal(tmux, target);
        const keys = t.keys;
        const real = await node.pods.create({ name: `sea-watch-${cols}`, containers: [{ name: 'stubborn', mode: 'ignore' }] });
        const ref = `${real.namespace}/${real.name}`;
        const env = Object.entries(seaEnv(h, { TERM: 'xterm-256color' }))
          .map(([k, v]) => `${k}=${shellQuote(String(v))}`)
          .join(' ');
        const args = ['watch', '--runtime-endpoint', `unix://${node.socket}`, '--state-dir', join(h.root, `state-${cols}`), '--node', 'sea-node'];
        const cmd = `env -i ${env} ${shellQuote(h.exe)} ${args.map(shellQuote).join(' ')}; echo "EXIT=$?"; sleep 60`;
        tmux('new-session', '-d', '-s', target, '-x', String(cols), '-y', String(rows), '-c', h.cwd, cmd);

        const first = await t.until((s) => s.includes('NAMESPACE/NAME') && onOneLine(s, ref, cols), 'the pod table with the new pod, on one line', 20_000);
        expect(first).toContain('podctl watch');

        keys('/');
        keys('-l', ref);
        keys('Enter');
        // the header names the filter where it has the room (at 80 columns it is cut): the pod selected
        // and the help line back (the filter's input closed) are what both widths show
        await t.until((s) => (cols >= 160 ? s.includes(`filter "${ref}"`) : s.includes('↑/↓')) && rowOf(s, ref)?.startsWith('▶') === true, 'the filter', 20_000);

        keys('C-k');
        await t.until((s) => s.includes(`Kill ${ref}`) && s.includes('grace seconds'), 'the grace prompt', 20_000);
        keys('BSpace', 'BSpace', 'BSpace', '2');
        keys('Enter');
        await t.until((s) => s.includes(`Kill ${ref} with grace 2s?`), 'the confirmation', 20_000);
        keys('y');
        await t.until((s) => new RegExp(`${real.name}\\s+terminating`).test(s), 'the pod terminating', 20_000);
        await t.until((s) => new RegExp(`${real.name}\\s+(terminated|finished)`).test(s), 'the pod terminated after its grace', 30_000);
        expect(await exitInfo(node.cri, real.containers[0]!.id)).toMatchObject({ state: 'exited', exitCode: 137 });

        keys('q');
        const after = await t.until((s) => s.includes('EXIT='), 'the command to exit', 20_000);
        expect(after).toContain('EXIT=0');
        expect(entries(h.exeDir)).toEqual(['podctl']);
        expect(entries(h.cwd)).toEqual([]);
        expect(entries(h.home)).toEqual([]);
      });
    }
  });
});
