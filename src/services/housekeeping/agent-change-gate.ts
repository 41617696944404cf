/**
 * Whether the agent's next housekeeping step must be a full one (the runtime listed, the desired set
 * compared) or can be a light one. Owns the inputs that say so: the session's events, the API
 * watch's change mark, lease holders' PIDs, the desired file's stamp, and a full step at least every
 * `FULL_STEP_EVERY_MS`.
 */
import { stat } from 'node:fs/promises';
import type { NodeSession, PodInfo } from '../../domain/session-api.js';
import { pidAlive } from '../../store/proc.js';
import type { ApiInformers } from '../api/api-informers.js';
import type { DesiredSource } from './sync-known.js';

/** A full step at least this often, whatever the events say. */
const FULL_STEP_EVERY_MS = 30_000;

/**
 * Decides whether a housekeeping step can have anything to do. Inputs that change without an event
 * are checked directly (a lease holder's PID, the desired file's stamp); the rest arrives as session
 * events. Conservative: when in doubt, a full step.
 */
export class ChangeGate {
  #dirty = true;
  #lastFullAt = 0;
  #owners = new Set<number>();
  #terminating = new Set<string>();
  #fileStamp: string | undefined;
  readonly #source: DesiredSource;
  readonly #now: () => number;
  readonly #unsubscribe: () => void;
  /** The watched API pods (source api); without them an API source always takes a full step. */
  readonly #informers: ApiInformers | undefined;
  #informersMark = -1;

  constructor(session: NodeSession, source: DesiredSource, now: () => number, informers?: ApiInformers) {
    this.#source = source;
    this.#now = now;
    this.#informers = informers;
    this.#unsubscribe = session.subscribe((event) => {
      // a relist that found nothing new is not a change; everything else may be
      if (event.source === 'runtime' && event.kind === 'relisted' && event.uids.length === 0) return;
      if (event.source === 'session') return;
      this.#dirty = true;
    });
  }

  async needsFullStep(): Promise<boolean> {
    if (this.#dirty || this.#terminating.size > 0) return true;
    if (this.#source.kind === 'api' && (!this.#informers || this.#informers.changedSince(this.#informersMark))) return true;
    if (this.#now() - this.#lastFullAt >= FULL_STEP_EVERY_MS) return true;
    for (const pid of this.#owners) if (!pidAlive(pid)) return true;
    if (this.#source.kind === 'file' && (await fileStamp(this.#source.path)) !== this.#fileStamp) return true;
    return false;
  }

  /** Something happened outside the session's events (a maintenance drain): the next step is full. */
  markChanged(): void {
    this.#dirty = true;
  }

  stillTerminating(uid: string): boolean {
    return this.#terminating.has(uid);
  }

  /** A full step begins: what changes from now on (its own kills included) makes the next one full too. */
  beginFullStep(): void {
    this.#dirty = false;
  }

  /** Called after a full step that succeeded, with the pods it listed and the API watch's mark taken before it. */
  afterFullStep(pods: PodInfo[], informersMark: number | undefined): void {
    if (informersMark !== undefined) this.#informersMark = informersMark;
    this.#lastFullAt = this.#now();
    this.#owners = new Set(pods.filter((p) => p.owner?.alive === true && p.owner.pid !== process.pid).map((p) => p.owner!.pid));
    this.#terminating = new Set(pods.filter((p) => p.state === 'terminating' || (p.state === 'terminated' && p.worker?.finished !== true)).map((p) => p.uid));
    if (this.#source.kind === 'file') void fileStamp(this.#source.path).then((s) => (this.#fileStamp = s));
  }

  close(): void {
    this.#unsubscribe();
  }
}

async function fileStamp(path: string): Promise<string> {
  try {
    const s = await stat(path);
    return `${s.ino}:${s.size}:${s.mtimeMs}`;
  } catch (error) {
    return `error:${(error as NodeJS.ErrnoException).code ?? ''}`;
  }
}
