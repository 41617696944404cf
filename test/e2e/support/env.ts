/**
 * Where the end-to-end suite finds its real containerd, and what happens when there is none.
 *
 * `scripts/test.sh` (and so `.ci/run`) starts the private containerd node with
 * `test/e2e/containerd-node.sh up` and exports the socket it prints as PODCTL_E2E_SOCKET.
 *
 * Invariants:
 * - No socket configured: every e2e suite is skipped, and each test file says so LOUDLY on stderr,
 *   so a green run without a runtime never passes for a tested one.
 * - PODCTL_REQUIRE_CONTAINERD=1 (set by CI): a missing runtime is an error that fails the file at
 *   import time instead of skipping it.
 * - A socket that is configured but not serving is always an error (a misconfigured run, not a
 *   machine without root).
 */
import { statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe } from 'vitest';

interface E2EEnvironment {
  /** Absolute path of containerd's CRI socket; undefined when the suite is skipped. */
  socket?: string;
  /** The node's directory (the socket's directory, as containerd-node.sh lays it out). */
  nodeDir?: string;
  /** Why the suite is skipped, when it is. */
  skipReason?: string;
}

/** test/e2e/containerd-node.sh, for the tests that stop and restart a node of their own. */
export const NODE_SCRIPT = join(dirname(fileURLToPath(import.meta.url)), '..', 'containerd-node.sh');

/** The image containerd-node.sh builds and imports (also the sandbox image). */
export const TEST_IMAGE = 'localhost/podctl-test/pause:1.0';

function isSocket(path: string): boolean {
  try {
    return statSync(path).isSocket();
  } catch {
    return false;
  }
}

function socketPath(value: string): string {
  return value.startsWith('unix://') ? value.slice('unix://'.length) : value;
}

function resolveEnvironment(env: NodeJS.ProcessEnv): E2EEnvironment {
  const raw = env.PODCTL_E2E_SOCKET?.trim();
  const required = env.PODCTL_REQUIRE_CONTAINERD === '1';
  if (!raw) {
    const skipReason = 'PODCTL_E2E_SOCKET is not set (no containerd test node: run `npm test` as root on Linux)';
    if (required) {
      throw new Error(`e2e: PODCTL_REQUIRE_CONTAINERD=1 but ${skipReason}`);
    }
    return { skipReason };
  }
  const socket = socketPath(raw);
  if (!isSocket(socket)) {
    throw new Error(`e2e: PODCTL_E2E_SOCKET=${raw} is not a unix socket; start the node with test/e2e/containerd-node.sh up`);
  }
  return { socket, nodeDir: dirname(socket) };
}

const e2e: E2EEnvironment = resolveEnvironment(process.env);

let warned = false;
/** Prints the skip banner (once per test file). */
function warnIfSkipped(file: string): void {
  if (e2e.socket || warned) return;
  warned = true;
  const line = '#'.repeat(78);
  console.warn([line, `# E2E SKIPPED: ${file}`, `# ${e2e.skipReason}`, '# These tests exercise podctl against a REAL containerd; nothing here was tested.', line].join('\n'));
}

/**
 * `describe` for suites that need the real runtime: skipped (loudly) without one.
 * Usage: `describeContainerd(import.meta.url, 'kill with grace', () => { … })`.
 */
export function describeContainerd(fileUrl: string, name: string, body: () => void): void {
  const file = fileURLToPath(fileUrl).replace(/^.*\/test\/e2e\//, 'test/e2e/');
  warnIfSkipped(file);
  describe.skipIf(!e2e.socket)(name, body);
}

/** The socket, for code that only runs inside a `describeContainerd` body. */
export function requireSocket(): string {
  if (!e2e.socket) throw new Error('e2e: no containerd socket (this code must run inside describeContainerd)');
  return e2e.socket;
}

export function requireNodeDir(): string {
  if (!e2e.nodeDir) throw new Error('e2e: no containerd node (this code must run inside describeContainerd)');
  return e2e.nodeDir;
}
