/**
 * A containerd node of a test's own, for the scenarios that stop and restart the runtime.
 *
 * Stopping containerd under the shared node would break every other e2e file running at the same
 * time, so such a test brings up a second node (its own NODE_DIR, socket, state, shims) with the
 * same script, and takes it down afterwards. Shims and containers outlive a containerd restart, as
 * on a real node; containerd reconnects to them when it starts again.
 *
 * Invariants: containerd is stopped only by the PID this node's script recorded (never by name);
 * `down()` removes the node's pods, stops it and deletes its directory.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { NODE_SCRIPT } from './env.js';
import { alive } from '../../support/process.js';

const run = promisify(execFile);

export class PrivateNode {
  readonly nodeDir: string;
  #socket: string | undefined;

  constructor(nodeDir: string) {
    this.nodeDir = nodeDir;
  }

  get socket(): string {
    if (!this.#socket) throw new Error(`node ${this.nodeDir} is not up`);
    return this.#socket;
  }

  /** `containerd-node.sh up`: starts containerd (again) and returns its socket. */
  async up(): Promise<string> {
    const { stdout } = await run('bash', [NODE_SCRIPT, 'up'], {
      env: { ...process.env, NODE_DIR: this.nodeDir },
      timeout: 120_000,
    });
    this.#socket = stdout.trim().split('\n').at(-1);
    return this.socket;
  }

  /** The PID the script recorded for this node's containerd. */
  async pid(): Promise<number> {
    const text = await readFile(`${this.nodeDir}/containerd.pid`, 'utf8');
    const pid = Number.parseInt(text.trim(), 10);
    if (!Number.isInteger(pid) || pid <= 1) throw new Error(`bad PID file in ${this.nodeDir}: '${text.trim()}'`);
    return pid;
  }

  /**
   * Stops containerd by its PID (SIGTERM, then SIGKILL after `graceMs`) and waits until it is gone.
   * Pods (shims, containers) keep running.
   */
  async stopRuntime(graceMs = 5_000): Promise<void> {
    const pid = await this.pid();
    signal(pid, 'SIGTERM');
    const deadline = Date.now() + graceMs;
    while (alive(pid) && Date.now() < deadline) await sleep(20);
    if (alive(pid)) signal(pid, 'SIGKILL');
    const killDeadline = Date.now() + 5_000;
    while (alive(pid) && Date.now() < killDeadline) await sleep(20);
    if (alive(pid)) throw new Error(`containerd ${pid} did not exit`);
  }

  /** `containerd-node.sh down --purge`: removes pods, stops containerd, deletes the directory. */
  async down(): Promise<void> {
    await run('bash', [NODE_SCRIPT, 'down', '--purge'], {
      env: { ...process.env, NODE_DIR: this.nodeDir },
      timeout: 120_000,
    });
    this.#socket = undefined;
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
