/**
 * What the shutdown guard asks of systemd-logind over the system D-Bus (dbus.ts): the longest delay
 * a delay inhibitor may hold a shutdown (`InhibitDelayMaxUSec`), the inhibitors held now
 * (`ListInhibitors`: the kubelet's own graceful shutdown shows there), and the `PrepareForShutdown`
 * signal (true: a shutdown is starting and waits for the delay locks; false: it was cancelled).
 *
 * Invariants: every call is bounded (`LOGIND_CALL_MS`); a connection that ends is reported once to
 * the subscriber (`onClosed`), so the guard never believes it is listening when it is not.
 */
import { DEFAULT_SYSTEM_BUS, DBusConnection, type DBusCall } from './dbus.js';

const LOGIND_CALL_MS = 5_000;
/** The name podctl's lock carries in logind's list (`systemd-inhibit --who`). */
export const INHIBIT_WHO = 'podctl';
const MANAGER = { destination: 'org.freedesktop.login1', path: '/org/freedesktop/login1', interface: 'org.freedesktop.login1.Manager' } as const;

export interface Inhibitor {
  what: string[];
  who: string;
  why: string;
  mode: string;
  uid: number;
  pid: number;
}

/** The bus the guard speaks to: `DBUS_SYSTEM_BUS_ADDRESS` when set, else the system bus. */
function systemBusAddress(env: NodeJS.ProcessEnv = process.env): string {
  const given = env.DBUS_SYSTEM_BUS_ADDRESS;
  return given !== undefined && given !== '' ? given : DEFAULT_SYSTEM_BUS;
}

export class Logind {
  private constructor(
    readonly connection: DBusConnection,
    readonly address: string,
  ) {}

  static async connect(address = systemBusAddress()): Promise<Logind> {
    return new Logind(await DBusConnection.open(address, LOGIND_CALL_MS), address);
  }

  /** logind's InhibitDelayMaxUSec, in milliseconds. */
  async inhibitDelayMaxMs(): Promise<number> {
    const [value] = await this.#call({ ...MANAGER, interface: 'org.freedesktop.DBus.Properties', member: 'Get', args: [MANAGER.interface, 'InhibitDelayMaxUSec'] });
    if (typeof value !== 'bigint' && typeof value !== 'number') throw new Error(`logind's InhibitDelayMaxUSec is not a number (${String(value)})`);
    return Number(BigInt(value) / 1000n);
  }

  async listInhibitors(): Promise<Inhibitor[]> {
    const [list] = await this.#call({ ...MANAGER, member: 'ListInhibitors' });
    if (!Array.isArray(list)) throw new Error('logind answered ListInhibitors with no list');
    return (list as unknown[][]).map(([what, who, why, mode, uid, pid]) => ({
      what: String(what).split(':'),
      who: String(who),
      why: String(why),
      mode: String(mode),
      uid: Number(uid),
      pid: Number(pid),
    }));
  }

  /** Calls `listener` with PrepareForShutdown's argument for every such signal from now on. */
  async onPrepareForShutdown(listener: (start: boolean) => void): Promise<() => void> {
    return this.connection.subscribe(
      `type='signal',sender='${MANAGER.destination}',interface='${MANAGER.interface}',member='PrepareForShutdown',path='${MANAGER.path}'`,
      (signal) => {
        if (signal.member === 'PrepareForShutdown' && signal.interface === MANAGER.interface) listener(signal.body[0] === true);
      },
      LOGIND_CALL_MS,
    );
  }

  onClosed(listener: (error: Error) => void): () => void {
    return this.connection.onClose(listener);
  }

  close(): void {
    this.connection.close();
  }

  #call(call: Omit<DBusCall, 'destination'> & { destination?: string }): Promise<unknown[]> {
    return this.connection.call({ destination: MANAGER.destination, ...call }, LOGIND_CALL_MS);
  }
}

/** Is this a podctl guard's lock (who "podctl", a delay lock on shutdown), as inhibit.ts takes it? */
export function isPodctlInhibitor(inhibitor: Inhibitor): boolean {
  return inhibitor.who === INHIBIT_WHO && inhibitor.mode === 'delay' && inhibitor.what.includes('shutdown');
}

/** Is this the kubelet's graceful-shutdown inhibitor (who "kubelet", a delay lock on shutdown)? */
export function isKubeletInhibitor(inhibitor: Inhibitor): boolean {
  return inhibitor.who === 'kubelet' && inhibitor.mode === 'delay' && inhibitor.what.includes('shutdown');
}

const SHUTDOWN_TARGETS = new Set(['shutdown.target', 'reboot.target', 'poweroff.target', 'halt.target', 'kexec.target', 'soft-reboot.target']);

/**
 * Is the machine going down? systemd's job queue holds a start job for a shutdown target
 * (reboot.target, poweroff.target, …) from the moment a shutdown begins, whether or not logind
 * announced it: a SIGTERM from the guard's unit then is the shutdown's, not an operator's
 * `systemctl stop` or `restart`.
 */
export async function shutdownJobQueued(logind: Logind): Promise<string | undefined> {
  const [jobs] = await logind.connection.call(
    { destination: 'org.freedesktop.systemd1', path: '/org/freedesktop/systemd1', interface: 'org.freedesktop.systemd1.Manager', member: 'ListJobs' },
    LOGIND_CALL_MS,
  );
  if (!Array.isArray(jobs)) return undefined;
  const job = (jobs as unknown[][]).find(([, unit, type]) => SHUTDOWN_TARGETS.has(String(unit)) && String(type) === 'start');
  return job ? String(job[1]) : undefined;
}
