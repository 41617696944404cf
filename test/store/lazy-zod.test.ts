import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { tempDir } from './support/fixtures.js';

describe('zod is loaded lazily', () => {
  it('the happy path (checkpoints, leases, inbox) never loads zod; a rejected checkpoint does', async () => {
    const dir = await tempDir();
    try {
      const out = execFileSync(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'support/happy-path.ts'), join(dir.path, 'state')], { encoding: 'utf8' });
      expect(JSON.parse(out)).toEqual({ happy: false, afterRejection: true });
    } finally {
      await dir.cleanup();
    }
  });
});
