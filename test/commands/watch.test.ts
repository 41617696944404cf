import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import Watch from '../../src/commands/watch.js';
import type { SessionOptions } from '../../src/domain/session-api.js';
import { FakeSession, pod } from '../tui/support/fake-session.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

afterEach(() => {
  vi.restoreAllMocks();
  delete (Watch as { sessionFactory?: unknown }).sessionFactory;
});

describe('podctl watch (command)', () => {
  it('streams JSON lines when stdout is not a terminal, and stops cleanly on SIGINT', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'podctl-watch-cmd-'));
    const session = new FakeSession([pod('default/a'), pod('kube-system/b')]);
    const opened: SessionOptions[] = [];
    Object.defineProperty(Watch, 'sessionFactory', {
      value: async (o: SessionOptions) => {
        opened.push(o);
        return session;
      },
      configurable: true,
      writable: true,
    });
    const written: string[] = [];
    let sawPods: () => void = () => undefined;
    const podsWritten = new Promise<void>((r) => (sawPods = r));
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      if (written.join('').split('\n').length > 2) sawPods();
      return true;
    });
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    expect(process.stdout.isTTY).not.toBe(true);

    const run = Watch.run(['--state-dir', dir, '--runtime-endpoint', 'unix:///tmp/x.sock', '--no-color'], root);
    await podsWritten;
    process.emit('SIGINT', 'SIGINT');
    const result = await run;

    expect(result).toBeUndefined();
    expect(opened[0]).toMatchObject({ stateDir: dir, runtimeEndpoint: 'unix:///tmp/x.sock' });
    const lines = written.join('').trim().split('\n');
    expect(lines.map((l) => JSON.parse(l) as { type: string; name: string })).toEqual([expect.objectContaining({ type: 'pod', name: 'a' }), expect.objectContaining({ type: 'pod', name: 'b' })]);
    expect(session.closed).toBe(true);
    expect(process.exitCode ?? 0).toBe(0);
    await rm(dir, { recursive: true, force: true });
  });

  it('rejects an unknown output format as a usage error', async () => {
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    await expect(Watch.run(['-o', 'yaml'], root)).rejects.toMatchObject({ oclif: { exit: 2 } });
    process.exitCode = undefined;
  });
});
