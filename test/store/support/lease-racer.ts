/**
 * Child process for the lease race test: opens the store, waits for the go-file, tries to acquire
 * every UID given, prints the ones it won as JSON, then stays alive until told to exit (stdin EOF),
 * so that its leases stay live while the others decide.
 */
import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { openStore } from '../../../src/store/index.js';

const [stateDir, goFile, ...uids] = process.argv.slice(2);
const store = await openStore({ stateDir: stateDir! });
while (!existsSync(goFile!)) await sleep(2);
const won: string[] = [];
await Promise.all(
  uids.map(async (uid) => {
    const result = await store.leases.tryAcquire(uid);
    if (result.acquired) won.push(uid);
  }),
);
process.stdout.write(`${JSON.stringify(won)}\n`);
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
