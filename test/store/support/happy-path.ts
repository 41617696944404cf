/**
 * Child script for lazy-zod.test.ts: exercises the store's happy path (write and read checkpoints,
 * leases, inbox) and prints whether zod was loaded, then reads a corrupt-schema checkpoint and
 * prints it again.
 */
import { createRequire } from 'node:module';
import { writeFile } from 'node:fs/promises';
import { openStore } from '../../../src/store/index.js';
import { encodeCheckpoint } from '../../../src/store/format.js';
import { checkpointFor } from './fixtures.js';

const require = createRequire(import.meta.url);
const zodLoaded = (): boolean => Object.keys(require.cache).some((k) => k.includes('/node_modules/zod/'));
const store = await openStore({ stateDir: process.argv[2]!, report: () => {} });
await store.checkpoints.write(checkpointFor('a-1'));
await store.checkpoints.read('a-1');
await store.leases.tryAcquire('a-1');
await store.leases.inspectAll();
await store.inbox.post({ uid: 'a-1', kind: 'kill' });
await store.inbox.pending('a-1');
const happy = zodLoaded();
const bad = checkpointFor('b-2') as unknown as { status: { gracePeriod: unknown } };
bad.status.gracePeriod = 'thirty';
await writeFile(store.checkpoints.pathOf('b-2'), encodeCheckpoint(bad as never));
await store.checkpoints.read('b-2');
process.stdout.write(JSON.stringify({ happy, afterRejection: zodLoaded() }));
