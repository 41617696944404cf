/**
 * Per-file wiring for e2e suites: one CRI client on the shared test node and a pod factory whose
 * pods are removed after every test.
 *
 * Call `useContainerd()` at the top of a `describeContainerd` body; it registers the vitest hooks
 * and returns a handle whose fields are valid inside tests. `usePrivateNode(name)` does the same on
 * a containerd node of the file's own (support/node.ts), for the files that stop the runtime or act
 * on every pod of it.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { connectCri, type CriClient } from '../../../src/cri/index.js';
import { requireNodeDir, requireSocket } from './env.js';
import { PrivateNode } from './node.js';
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

/** A ContainerdContext on a node of the file's own; `privateNode` stops and restarts its runtime. */
export interface PrivateNodeContext extends ContainerdContext {
  readonly privateNode: PrivateNode;
}

/**
 * Brings up a node of the file's own in `/tmp/podctl-e2e-<name>-<pid>` before its tests (a CRI
 * client on it, a pod factory); after them removes its pods, takes the node down and deletes its
 * directory and lock. Pods are not removed between tests (a file that wants it says so). With
 * `skip` (why the file's tests are skipped) no node is brought up.
 */
export function usePrivateNode(name: string, skip?: string): PrivateNodeContext {
  const privateNode = new PrivateNode(`/tmp/podctl-e2e-${name}-${process.pid}`);
  let cri: CriClient | undefined;
  let pods: PodFactory | undefined;
  beforeAll(async () => {
    if (skip !== undefined) return;
    await privateNode.up();
    cri = await connectCri({ endpoint: privateNode.socket, timeoutMs: 30_000 });
    pods = new PodFactory(cri, join(privateNode.nodeDir, 'logs', 'pods'));
  }, 180_000);
  afterAll(async () => {
    if (skip !== undefined) return;
    try {
      await pods?.removeAll();
    } finally {
      cri?.close();
      await privateNode.down();
      await rm(`${privateNode.nodeDir}.lock`, { force: true });
    }
  }, 120_000);
  return {
    privateNode,
    get socket() {
      return privateNode.socket;
    },
    nodeDir: privateNode.nodeDir,
    get cri() {
      if (!cri) throw new Error('e2e: CRI client not connected yet (use it inside a test)');
      return cri;
    },
    get pods() {
      if (!pods) throw new Error('e2e: pod factory not ready yet (use it inside a test)');
      return pods;
    },
  };
}
