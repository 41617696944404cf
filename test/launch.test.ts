/**
 * src/launch.ts: the bundled CLI serves exactly the commands in the manifest, each from its own
 * class (a command missing from COMMANDS would be imported from dist/commands/ with a second oclif).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { COMMANDS, isCommand } from '../src/launch.js';

describe('the launch table', () => {
  it('names every command of the manifest, and nothing else', () => {
    const manifest = JSON.parse(readFileSync(path.join(process.cwd(), 'oclif.manifest.json'), 'utf8')) as { commands: Record<string, unknown> };
    expect(Object.keys(COMMANDS).sort()).toEqual(Object.keys(manifest.commands).sort());
  });

  it('loads each command class under its id', async () => {
    for (const [id, load] of Object.entries(COMMANDS)) {
      const command = await load();
      expect(typeof command.run, id).toBe('function');
      expect(command.summary, id).toBeTruthy();
    }
  });

  it('isCommand knows the commands and nothing inherited', () => {
    expect(isCommand('kill')).toBe(true);
    expect(isCommand('sync-known')).toBe(true);
    expect(isCommand('toString')).toBe(false);
    expect(isCommand('help')).toBe(true);
    expect(isCommand('autocomplete:script')).toBe(true);
    expect(isCommand('stauts')).toBe(false);
    expect(isCommand(undefined)).toBe(false);
  });
});
