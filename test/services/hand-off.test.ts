import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { handOff, handOffArgs } from '../../src/session/hand-off.js';
import { podsToHandOff, type TerminateResult } from '../../src/services/terminate/terminate.js';
import { waitForText } from '../support/wait.js';

describe('hand-off to a background driver', () => {
  it('builds an unbounded `kill --uid … --drive` that waits for the handing process, with the same node, runtime and state dir (no --grace: grace only shrinks)', () => {
    expect(handOffArgs({ uids: ['a', 'b'], bin: 'x', stateDir: '/s', runtimeEndpoint: 'unix:///r.sock', node: 'n1', afterPid: 123 })).toEqual([
      'kill',
      '--uid',
      'a',
      '--uid',
      'b',
      '--drive',
      '--after-pid',
      '123',
      '--yes',
      '--state-dir',
      '/s',
      '--runtime-endpoint',
      'unix:///r.sock',
      '--node',
      'n1',
      '--log-level',
      'warn',
      '--json',
    ]);
    expect(handOffArgs({ uids: ['a'], bin: 'x', stateDir: '/s' })).not.toContain('--grace');
  });

  it('hands off only pods this process drives and has not seen terminate (requested, timed out or interrupted)', () => {
    const result = {
      action: 'kill',
      waited: false,
      pods: [
        { uid: 'local', outcome: 'requested', handledBy: 'local' },
        { uid: 'delegated', outcome: 'requested', handledBy: 'delegated' },
        { uid: 'done', outcome: 'already-terminated' },
        { uid: 'failed', outcome: 'failed', handledBy: 'local' },
      ],
    } as unknown as TerminateResult;
    expect(podsToHandOff(result)).toEqual(['local']);
    const waited = {
      ...result,
      waited: true,
      pods: [
        { uid: 'timed-out', outcome: 'timeout', handledBy: 'local' },
        { uid: 'interrupted', outcome: 'interrupted', handledBy: 'local' },
        { uid: 'theirs', outcome: 'timeout', handledBy: 'delegated' },
        { uid: 'terminated', outcome: 'terminated', handledBy: 'local' },
      ],
    } as unknown as TerminateResult;
    expect(podsToHandOff(waited)).toEqual(['timed-out', 'interrupted']);
  });

  it('starts a detached process whose output goes to a log in the state dir', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'podctl-handoff-'));
    const bin = path.join(dir, 'fake-bin.mjs');
    writeFileSync(bin, 'console.log(JSON.stringify(process.argv.slice(2)));\n');
    const started = handOff({ uids: ['u1'], bin, stateDir: path.join(dir, 'state') });
    expect(started?.pid).toBeGreaterThan(0);
    const text = await waitForText(
      "the detached process's output in its log",
      () => readFileSync(started?.log ?? '', 'utf8'),
      (t) => t.includes('u1'),
      10_000,
    );
    expect(JSON.parse(text)).toEqual(handOffArgs({ uids: ['u1'], bin, stateDir: path.join(dir, 'state') }));
    expect(handOff({ uids: [], bin, stateDir: dir })).toBeUndefined();
  });
});
