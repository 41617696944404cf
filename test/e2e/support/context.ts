/**
 * Per-file wiring for e2e suites: one CRI client on the shared test node and a pod factory whose
 * pods are removed after every test.
 *
 * Call `useContainerd()` at the top of a `describeContainerd` body; it registers the vitest hooks
 * and returns a handle whose fields are valid inside tests.
 */
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { connectCri, type CriClient } from '../../../src/cri/client/client.js';
import { requireNodeDir, requireSocket } from './env.js';
import { PodFactory } from './pods.js';

export interface ContainerdContext {
  readonly socket: string;
  readonly nodeDir: string;
  readonly cri: CriClient;
  readonly pods: PodFactory;
}

export function useContainerd(): ContainerdContext {
  let cri: CriClient | undefined;
  let pods: PodFactory | undefined;
  const context: ContainerdContext = {
    get socket() {
      return requireSocket();
    },
    get nodeDir() {
      return requireNodeDir();
    },
    get cri() {
      if (!cri) throw new Error('e2e: CRI client not connected yet (use it inside a test)');
      return cri;
    },
    get pods() {
      if (!pods) throw new Error('e2e: pod factory not ready yet (use it inside a test)');
      return pods;
    },
  };
  beforeAll(async () => {
    cri = await connectCri({ endpoint: requireSocket(), timeoutMs: 30_000 });
    await cri.version();
    pods = new PodFactory(cri, join(requireNodeDir(), 'logs', 'pods'));
  });
  afterEach(async () => {
    await pods?.removeAll();
  });
  afterAll(() => {
    cri?.close();
  });
  return context;
}
