import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { openStore, watchFolder, type Store } from '../../src/store/index.js';
import { entriesOf, podFor, tempDir, temporariesIn } from './support/fixtures.js';

let dir: { path: string; cleanup: () => Promise<void> };
let store: Store;
let reports: string[];

beforeEach(async () => {
  dir = await tempDir();
  reports = [];
  store = await openStore({ stateDir: join(dir.path, 'state'), report: (m) => reports.push(m) });
});
afterEach(async () => {
  await dir.cleanup();
});

describe('request inbox', () => {
  it('posts requests atomically and lists them per pod in arrival order', async () => {
    let t = 1_000;
    const inbox = (await openStore({ stateDir: store.layout.root, clock: () => (t += 1) })).inbox;
    await inbox.post({ uid: 'p1', kind: 'kill', gracePeriodSeconds: 30 });
    await inbox.post({ uid: 'p2', kind: 'kill' });
    await inbox.post({ uid: 'p1', kind: 'kill', gracePeriodSeconds: 5, evict: true, reason: 'Evicted', pod: podFor('p1') });
    expect([...(await inbox.pendingUids())].sort()).toEqual(['p1', 'p2']);
    const p1 = await inbox.pending('p1');
    expect(p1.map((r) => r.gracePeriodSeconds)).toEqual([30, 5]);
    expect(p1[1]).toMatchObject({ evict: true, reason: 'Evicted', fromPid: process.pid, pod: { metadata: { uid: 'p1' } } });
    await inbox.acknowledge(p1[0]!);
    expect((await inbox.pending('p1')).map((r) => r.gracePeriodSeconds)).toEqual([5]);
    expect(await temporariesIn(store.layout.inbox)).toEqual([]);
    for (const name of await entriesOf(store.layout.inbox)) expect((await stat(join(store.layout.inbox, name))).mode & 0o777).toBe(0o600);
  });

  it('quarantines an invalid request without blocking the valid ones', async () => {
    await store.inbox.post({ uid: 'p1', kind: 'kill', gracePeriodSeconds: 3 });
    await writeFile(join(store.layout.inbox, 'p1@00000000000001-1-bad.req'), '{"kind":"reboot"}', { mode: 0o600 });
    const pending = await store.inbox.pending('p1');
    expect(pending.map((r) => r.gracePeriodSeconds)).toEqual([3]);
    expect(reports).toHaveLength(1);
    expect(reports[0]).toMatch(/^request .*p1@00000000000001-1-bad.req is not a valid request; moved to /);
    expect(await readdir(store.layout.quarantine)).toHaveLength(1);
  });

  it('the folder watcher names the pod of a posted request without waiting for the re-scan', async () => {
    const seen: string[] = [];
    let rescans = 0;
    const arrived = new Promise<void>((resolve) => {
      const watch = watchFolder(store.layout.inbox, {
        rescanMs: 60_000,
        onRescan: () => (rescans += 1),
        onName: (name) => {
          const uid = store.inbox.uidOfName(name);
          if (uid) {
            seen.push(uid);
            watch.close();
            resolve();
          }
        },
      });
    });
    await store.inbox.post({ uid: 'watched-pod', kind: 'kill' });
    await arrived;
    expect(seen).toEqual(['watched-pod']);
    expect(rescans).toBe(0);
  });
});
