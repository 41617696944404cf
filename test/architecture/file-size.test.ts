import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const SRC = path.resolve(import.meta.dirname, '../../src');
/** The most lines a source file in src/ may have. */
const MAX_LINES = 600;
/** Exempt (relative to src/, `/`-separated): the engine's port of pod_workers.go, and generated code. */
const EXEMPT = ['engine/workers.ts', 'cri/client/generated/'];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return /\.tsx?$/.test(entry.name) ? [full] : [];
  });
}

function lineCount(text: string): number {
  if (text === '') return 0;
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
}

/** `file: N lines` for every *.ts and *.tsx file under `root` over `limit` lines, except the exempt paths (a folder ends in `/`). */
function oversizedFiles(root: string, limit: number, exempt: readonly string[]): string[] {
  return sourceFiles(root)
    .map((file) => path.relative(root, file).split(path.sep).join('/'))
    .filter((rel) => !exempt.some((e) => (e.endsWith('/') ? rel.startsWith(e) : rel === e)))
    .map((rel) => ({ rel, lines: lineCount(readFileSync(path.join(root, rel), 'utf8')) }))
    .filter(({ lines }) => lines > limit)
    .map(({ rel, lines }) => `${rel}: ${lines} lines`)
    .sort();
}

describe('source files in src/', () => {
  it(`have at most ${MAX_LINES} lines each (except ${EXEMPT.join(', ')})`, () => {
    expect(oversizedFiles(SRC, MAX_LINES, EXEMPT)).toEqual([]);
  });

  describe('the size check (a self-check on a small tree)', () => {
    const tmp = mkdtempSync(path.join(tmpdir(), 'podctl-file-size-'));
    afterAll(() => rmSync(tmp, { recursive: true, force: true }));
    const root = path.join(tmp, 'tree');
    const write = (rel: string, lines: number): void => {
      mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
      writeFileSync(path.join(root, rel), 'export {};\n'.repeat(lines));
    };
    write('at-limit.ts', 5);
    write('over.ts', 6);
    write('deep/over.tsx', 9);
    write('notes.md', 50);
    write('engine/workers.ts', 50);
    write('cri/client/generated/runtime.ts', 50);
    write('cri/client/generated-not.ts', 7);

    it('names each file over the limit with its line count, and only those', () => {
      expect(oversizedFiles(root, 5, EXEMPT)).toEqual(['cri/client/generated-not.ts: 7 lines', 'deep/over.tsx: 9 lines', 'over.ts: 6 lines']);
    });

    it('skips only the exempt paths', () => {
      expect(oversizedFiles(root, 5, [])).toEqual([
        'cri/client/generated-not.ts: 7 lines',
        'cri/client/generated/runtime.ts: 50 lines',
        'deep/over.tsx: 9 lines',
        'engine/workers.ts: 50 lines',
        'over.ts: 6 lines',
      ]);
    });

    it('counts a last line without a newline', () => {
      const other = path.join(tmp, 'newline');
      mkdirSync(other);
      writeFileSync(path.join(other, 'six.ts'), 'a\nb\nc\nd\ne\nf');
      writeFileSync(path.join(other, 'five.ts'), 'a\nb\nc\nd\ne\n');
      expect(oversizedFiles(other, 5, EXEMPT)).toEqual(['six.ts: 6 lines']);
    });
  });
});
