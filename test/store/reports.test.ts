/**
 * The drain reports kept in the state dir (store/reports.ts): keeping one is the last thing a drain
 * does before it exits, so it is written atomically without fsyncs (a report describes a drain that
 * has ended; a power cut may lose it, never leave half of it), and the newest are kept.
 */
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { nodeFileOps, type FileOps } from '../../src/store/index.js';
import { listDrainReports, readDrainReport, saveDrainReport } from '../../src/store/reports.js';

function countingOps(): { ops: FileOps; fsyncs: () => number } {
  let fsyncs = 0;
  const ops: FileOps = {
    ...nodeFileOps,
    fsync: (handle) => {
      fsyncs += 1;
      return nodeFileOps.fsync(handle);
    },
    fsyncDir: (folder) => {
      fsyncs += 1;
      return nodeFileOps.fsyncDir(folder);
    },
  };
  return { ops, fsyncs: () => fsyncs };
}

describe('kept drain reports', () => {
  it('are written whole, without an fsync of the file or its folder', async () => {
    const stateDir = mkdtempSync(path.join(tmpdir(), 'podctl-reports-'));
    const { ops, fsyncs } = countingOps();
    const data = { format: 'test', pods: Array.from({ length: 100 }, (_, i) => ({ name: `p-${i}`, segments: ['x'.repeat(200)] })) };
    const file = await saveDrainReport(stateDir, data, Date.UTC(2026, 10, 28, 17, 0, 0), ops);
    expect(fsyncs()).toBe(0);
    expect(await readDrainReport(file)).toEqual(data);
    expect(await listDrainReports(stateDir)).toEqual([file]);
    // no temporary left beside it
    expect(readdirSync(path.dirname(file)).filter((name) => !name.startsWith('.'))).toEqual([path.basename(file)]);
  });
});
