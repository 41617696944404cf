/**
 * A private system bus for the shutdown guard's tests: a real `dbus-daemon` (Debian `dbus-daemon`)
 * with its own configuration, and on it the suite's stand-in logind (logind-standin.py, python3-dbus)
 * whose Inhibit hands out a real file descriptor. Tests point podctl at it with
 * `DBUS_SYSTEM_BUS_ADDRESS`, as sd-bus's `systemd-inhibit` reads it too.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const PYTHON = '/usr/bin/python3';
const STANDIN = path.join(import.meta.dirname, 'logind-standin.py');

/** What the bus tests need on the machine, or why they cannot run. */
export function logindBusMissing(): string | undefined {
  const checks: [string, string[]][] = [
    ['dbus-daemon', ['dbus-daemon', '--version']],
    ['systemd-inhibit', ['systemd-inhibit', '--version']],
    ['python3-dbus and python3-gi', [PYTHON, '-c', 'import dbus, dbus.service; from gi.repository import GLib']],
  ];
  for (const [what, [command, ...args]] of checks) {
    const run = spawnSync(command!, args, { stdio: 'ignore' });
    if (run.error || run.status !== 0) return `${what} is missing (Debian: apt-get install dbus-daemon systemd python3-dbus python3-gi)`;
  }
  return undefined;
}

interface StandinEvent {
  event: 'ready' | 'inhibit' | 'release' | 'prepare' | 'poweroff' | 'reboot-job' | 'delay';
  at: number;
  who?: string;
  pid?: number;
  why?: string;
  waitedMs?: number;
  held?: string[];
  start?: boolean;
}

export interface LogindBus {
  address: string;
  dir: string;
  events: StandinEvent[];
  /** Writes one command to the stand-in (shutdown, cancel, reboot-job). */
  send(command: 'shutdown' | 'cancel' | 'reboot-job'): void;
  /** The first event (from `from` on) matching, within `timeoutMs`. */
  waitFor(match: (e: StandinEvent) => boolean, timeoutMs: number, from?: number): Promise<StandinEvent>;
  /** For the next test on the same bus: InhibitDelayMaxUSec from now on, and an empty job queue. */
  setDelay(seconds: number): Promise<void>;
  /** Resolves once no lock is held (every inhibit released), within `timeoutMs`. */
  idle(timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

/** The PIDs holding a lock now, by the stand-in's inhibit and release events. */
function heldBy(events: StandinEvent[]): number[] {
  const held: number[] = [];
  for (const e of events) {
    if (e.event === 'inhibit') held.push(e.pid!);
    else if (e.event === 'release' && held.includes(e.pid!)) held.splice(held.indexOf(e.pid!), 1);
  }
  return held;
}

export async function startLogindBus(options: { delaySeconds: number }): Promise<LogindBus> {
  const dir = mkdtempSync(path.join(tmpdir(), 'podctl-bus-'));
  const socket = path.join(dir, 'system_bus_socket');
  // everything allowed to everyone on this private bus: the tests' names, signals and replies
  writeFileSync(
    path.join(dir, 'bus.conf'),
    `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN" "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=${socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
    <allow send_type="signal"/>
    <allow send_type="method_return"/>
    <allow send_type="error"/>
  </policy>
</busconfig>
`,
  );
  const daemon = spawn('dbus-daemon', [`--config-file=${path.join(dir, 'bus.conf')}`, '--nofork', '--print-address'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const address = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('dbus-daemon printed no address within 10 s')), 10_000);
    daemon.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      if (out.includes('\n')) {
        clearTimeout(timer);
        resolve(out.trim());
      }
    });
    daemon.once('exit', (code) => reject(new Error(`dbus-daemon exited (${code})`)));
  });
  const env = { ...process.env, DBUS_SYSTEM_BUS_ADDRESS: address };
  const standin = spawn(PYTHON, [STANDIN, '--delay-usec', String(Math.round(options.delaySeconds * 1_000_000))], { env, stdio: ['pipe', 'pipe', 'inherit'] });
  const events: StandinEvent[] = [];
  const waiters = new Set<() => void>();
  let buffer = '';
  standin.stdout.setEncoding('utf8').on('data', (d: string) => {
    buffer += d;
    for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
      events.push(JSON.parse(buffer.slice(0, nl)) as StandinEvent);
      buffer = buffer.slice(nl + 1);
    }
    for (const wake of waiters) wake();
  });
  const bus: LogindBus = {
    address,
    dir,
    events,
    send: (command) => standin.stdin.write(`${command}\n`),
    waitFor: (match, timeoutMs, from = 0) =>
      new Promise((resolve, reject) => {
        const check = (): boolean => {
          const found = events.slice(from).find(match);
          if (!found) return false;
          waiters.delete(wake);
          clearTimeout(timer);
          resolve(found);
          return true;
        };
        const wake = (): void => void check();
        const timer = setTimeout(() => {
          waiters.delete(wake);
          reject(new Error(`the stand-in logind said nothing matching within ${timeoutMs} ms; it said: ${JSON.stringify(events)}`));
        }, timeoutMs);
        waiters.add(wake);
        check();
      }),
    setDelay: async (seconds) => {
      const from = events.length;
      standin.stdin.write(`delay ${Math.round(seconds * 1_000_000)}\n`);
      await bus.waitFor((e) => e.event === 'delay', 10_000, from);
    },
    idle: async (timeoutMs) => {
      const deadline = Date.now() + timeoutMs;
      while (heldBy(events).length > 0) {
        if (Date.now() >= deadline) throw new Error(`locks still held after ${timeoutMs} ms by pid ${heldBy(events).join(', ')}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    close: async () => {
      await stop(standin);
      await stop(daemon);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await bus.waitFor((e) => e.event === 'ready', 15_000);
  return bus;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 3_000);
  await exited;
  clearTimeout(timer);
}

/** A kubelet stand-in's own graceful-shutdown lock, as the kubelet takes it (who "kubelet", delay), held until the returned function is called. */
export function holdKubeletInhibitor(address: string): { pid: number; release: () => Promise<void> } {
  const child = spawn('systemd-inhibit', ['--what=shutdown', '--mode=delay', '--who=kubelet', '--why=Kubelet needs time to handle node shutdown', 'cat'], {
    env: { ...process.env, DBUS_SYSTEM_BUS_ADDRESS: address },
    stdio: ['pipe', 'ignore', 'inherit'],
  });
  return {
    pid: child.pid!,
    release: async () => {
      child.stdin.end();
      await stop(child);
    },
  };
}
