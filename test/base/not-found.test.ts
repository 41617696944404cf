/** The closest command to a mistyped one (the same edit distance as @oclif/plugin-not-found). */
import { describe, expect, it } from 'vitest';
import { closestCommand } from '../../src/base/not-found.js';

const IDS = ['agent', 'autocomplete', 'drain', 'evict', 'help', 'kill', 'simulator', 'status', 'sync-known', 'version', 'watch'];

describe('closestCommand', () => {
  it('finds a command two edits away (a transposition, a missing or extra letter)', async () => {
    expect(await closestCommand('stauts', IDS)).toBe('status');
    expect(await closestCommand('kil', IDS)).toBe('kill');
    expect(await closestCommand('drian', IDS)).toBe('drain');
    expect(await closestCommand('evictt', IDS)).toBe('evict');
  });

  it('finds a command the word begins (three letters at least)', async () => {
    expect(await closestCommand('sync', IDS)).toBe('sync-known');
    expect(await closestCommand('simul', IDS)).toBe('simulator');
  });

  it('suggests nothing for a word close to no command', async () => {
    expect(await closestCommand('frobnicate', IDS)).toBeUndefined();
    expect(await closestCommand('pods', IDS)).toBeUndefined();
    expect(await closestCommand('x', [])).toBeUndefined();
  });
});
