/**
 * The engine's module boundary (issue point 9): no I/O and no imports from the rest of podctl.
 * Every import in src/engine is either relative within the engine or type-only.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const dir = join(import.meta.dirname, '../../src/engine');
const files = readdirSync(dir).filter((f) => f.endsWith('.ts'));

describe('engine module boundary', () => {
  it('has modules to check', () => {
    expect(files).toEqual(expect.arrayContaining(['index.ts', 'types.ts', 'workers.ts']));
  });
  for (const file of files) {
    it(`${file} imports only engine modules, or types`, () => {
      const source = readFileSync(join(dir, file), 'utf8');
      const imports = [...source.matchAll(/^(import|export)\s+(type\s+)?[^'";]*?from\s+'([^']+)'/gms)];
      for (const [, , typeOnly, from] of imports) {
        const local = from!.startsWith('./') && !from!.includes('..');
        expect(local || typeOnly !== undefined, `${file} imports ${from}`).toBe(true);
      }
      expect(source).not.toMatch(/from\s+'node:(fs|net|child_process|http|https|dgram)/);
      expect(source).not.toMatch(/\brequire\(|\bimport\(/);
    });
  }
});
