import { describe, expect, it } from 'vitest';
import { importCycles, importGraph } from './import-graph.js';

describe('imports in src/', () => {
  it('form no cycle (type-only and dynamic imports count)', () => {
    const cycles = importCycles(importGraph()).map((cycle) => cycle.join(' → '));
    expect(cycles).toEqual([]);
  });

  it('the cycle finder finds a cycle when there is one (a self-check on a small graph)', () => {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts', 'd.ts']],
      ['d.ts', []],
      ['e.ts', ['e.ts']],
    ]);
    expect(importCycles(graph)).toEqual(
      expect.arrayContaining([
        ['a.ts', 'b.ts', 'c.ts', 'a.ts'],
        ['e.ts', 'e.ts'],
      ]),
    );
    expect(importCycles(graph)).toHaveLength(2);
  });
});
