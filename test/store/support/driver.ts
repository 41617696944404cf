/**
 * Child-process driver for the crash and concurrency tests (and scripts/soak-store.sh): opens a
 * node session against a runtime endpoint, kills the given pods (each with its own grace), waits
 * for them, and closes. It prints one JSON line per step on stdout so the parent knows what was
 * reported done before it SIGKILLs the process at a random instant:
 *   {"step":"open"} · {"step":"requested","uid":…,"handledBy":…} · {"step":"waited",…} · {"step":"closed"}
 *
 * Usage: driver.ts <stateDir> <endpoint> <waitMs> [options] <uid>:<grace> [<uid>:<grace> …]
 *        driver.ts <stateDir> <endpoint> <waitMs> --sync-known <desired.json>
 * Options: --recorded-in-api (the kills carry out deletions the API server records),
 *          --fsync-delay-ms N (every fsync of the store takes N ms more: a disk slow to sync).
 */
import { readFileSync } from 'node:fs';
import { openSession } from '../../../src/session/open.js';
import { nodeFileOps, type FileOps } from '../../../src/store/files.js';

const [stateDir, endpoint, waitMsText, ...args] = process.argv.slice(2);
const option = (name: string): string | undefined => {
  const at = args.indexOf(name);
  if (at < 0) return undefined;
  const [, value] = args.splice(at, name === '--recorded-in-api' ? 1 : 2);
  return value ?? '';
};
const recordedInApi = option('--recorded-in-api') !== undefined;
const fsyncDelayMs = Number(option('--fsync-delay-ms') ?? 0);
const rest = args;
const pause = (): Promise<void> => new Promise((r) => setTimeout(r, fsyncDelayMs));
const storeOps: FileOps | undefined =
  fsyncDelayMs > 0
    ? {
        ...nodeFileOps,
        fsync: async (handle) => {
          await pause();
          await handle.sync();
        },
        fsyncDir: async (folder) => {
          await pause();
          await nodeFileOps.fsyncDir(folder);
        },
      }
    : undefined;
const say = (o: object): void => {
  process.stdout.write(`${JSON.stringify(o)}\n`);
};

const session = await openSession(
  {
    stateDir: stateDir!,
    runtimeEndpoint: endpoint!,
    rpcTimeoutMs: 5_000,
    log: (level, message) => {
      if (level === 'warn' || level === 'error') process.stderr.write(`driver ${process.pid}: ${message}\n`);
    },
  },
  storeOps ? { storeOps } : {},
);
say({ step: 'open', pid: process.pid });
const waitMs = Number(waitMsText);
if (rest[0] === '--sync-known') {
  const desired = JSON.parse(readFileSync(rest[1]!, 'utf8'));
  const result = await session.syncKnown(desired);
  say({ step: 'synced', resumed: result.resumed, orphaned: result.orphanedRuntimePods, forgotten: result.forgotten });
} else {
  const targets = rest.map((arg) => {
    const [uid, grace] = arg.split(':');
    return { uid: uid!, grace: Number(grace) };
  });
  const uids: string[] = [];
  await Promise.all(
    targets.map(async ({ uid, grace }) => {
      try {
        const handle = await session.requestKill({ uid, gracePeriodSeconds: grace, ...(recordedInApi ? { recordedInApi } : {}) });
        uids.push(uid);
        say({ step: 'requested', uid, grace, handledBy: handle.handledBy, ownerPid: handle.ownerPid });
      } catch (error) {
        say({ step: 'failed', uid, error: (error as Error).message });
      }
    }),
  );
  const outcomes = await session.waitTerminated(uids, { timeoutMs: waitMs });
  say({ step: 'waited', outcomes: Object.fromEntries(outcomes) });
}
await session.close();
say({ step: 'closed' });
