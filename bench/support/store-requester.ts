/**
 * Requester process for bench/store.bench.ts: opens a session on the same state dir and runtime
 * as the owner, then asks the owner (through the inbox) to shorten each pod's grace, one at a
 * time, printing the wall-clock instant each request started and when it was durable.
 *   store-requester.ts <stateDir> <endpoint> <grace> <uid>…
 */
import { performance } from 'node:perf_hooks';
import { openSession } from '../../src/session/open.js';

const [stateDir, endpoint, grace, ...uids] = process.argv.slice(2);
const wall = (): number => performance.timeOrigin + performance.now();
const session = await openSession({ stateDir: stateDir!, runtimeEndpoint: endpoint! });
for (const uid of uids) {
  const startedAt = wall();
  const handle = await session.requestKill({ uid, gracePeriodSeconds: Number(grace) });
  const durableAt = wall();
  process.stdout.write(`${JSON.stringify({ uid, startedAt, durableAt, handledBy: handle.handledBy })}\n`);
  // Space the requests so each hand-over is measured on its own.
  await new Promise((r) => setTimeout(r, 20));
}
await session.close();
