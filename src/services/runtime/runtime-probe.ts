/**
 * Whether the container runtime answers, for `watch`: one CRI Version call every 1.5 s with a
 * short deadline, on a connection of its own (a relist stuck behind a hung runtime cannot hide it).
 * The screen shows a banner while the runtime does not answer, and the events pane (and the JSON
 * stream) says when it stopped and when it came back.
 *
 * Invariants:
 * - A runtime that stops answering is reported within intervalMs + deadlineMs (≤ 3 s by default:
 *   2.7 s); one that answers again within intervalMs of its first answer.
 * - Never two probes at once; the timer is unref'd and stops on close(); a probe never throws.
 * - `current()` is the same object until the runtime's answering state changes.
 */
import type { CriClient } from '../../cri/client/client.js';

/**
 * A probe every 1.5 s, each with a deadline of 1.2 s, unless the options say otherwise. A probe is
 * most of an idle watch's own work (a call on its connection, a few wake-ups of the process), so it
 * comes as seldom as the 3 s bound allows with room for a loaded machine.
 */
const PROBE_DEFAULTS = { intervalMs: 1_500, deadlineMs: 1_200 };

export interface RuntimeHealth {
  answering: boolean;
  /** When it entered this state (epoch ms). */
  since: number;
  /** Why the last probe failed (while not answering). */
  error?: string;
}

export interface RuntimeProbeOptions {
  endpoint: string;
  /** Between the end of one probe and the next (ms). */
  intervalMs?: number;
  /** How long a probe waits for the runtime's answer (ms). */
  deadlineMs?: number;
  now?: () => number;
  /** The CRI client (default: a connection of its own to `endpoint`). */
  connect?: () => Promise<Pick<CriClient, 'version' | 'close'>>;
}

/** gRPC's words for a runtime that does not answer, in an operator's. */
export function probeErrorText(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  if (/deadline|timed? ?out/i.test(message)) return 'no answer within the probe deadline';
  if (/ECONNREFUSED|ENOENT|No connection established|UNAVAILABLE/i.test(message)) return 'connection refused (is the runtime running?)';
  return message.split('\n')[0] ?? message;
}

export class RuntimeProbe {
  readonly #options: RuntimeProbeOptions & typeof PROBE_DEFAULTS;
  readonly #now: () => number;
  readonly #listeners = new Set<(health: RuntimeHealth, previous: RuntimeHealth) => void>();
  #health: RuntimeHealth;
  #client: Pick<CriClient, 'version' | 'close'> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(options: RuntimeProbeOptions) {
    this.#options = { ...options, intervalMs: options.intervalMs ?? PROBE_DEFAULTS.intervalMs, deadlineMs: options.deadlineMs ?? PROBE_DEFAULTS.deadlineMs };
    this.#now = options.now ?? Date.now;
    this.#health = { answering: true, since: this.#now() };
  }

  current(): RuntimeHealth {
    return this.#health;
  }

  /** Called with the new and the previous health when the runtime stops or starts answering. */
  onChange(listener: (health: RuntimeHealth, previous: RuntimeHealth) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** A React-style subscription (the screen re-reads `current()`). */
  subscribe(listener: () => void): () => void {
    return this.onChange(() => listener());
  }

  start(): void {
    this.#schedule();
  }

  /** One probe now; resolves with the health after it. */
  async probe(): Promise<RuntimeHealth> {
    if (this.#closed) return this.#health;
    const { deadlineMs } = this.#options;
    // a runtime that does not answer stopped answering when this probe was sent
    const sent = this.#now();
    try {
      if (this.#client === undefined) {
        const { connectCri } = await import('../../cri/client/client.js');
        this.#client = await (this.#options.connect ?? (() => connectCri({ endpoint: this.#options.endpoint, timeoutMs: deadlineMs })))();
      }
      await this.#client.version({ timeoutMs: deadlineMs });
      this.#set({ answering: true, since: this.#now() });
    } catch (error) {
      this.#set({ answering: false, since: sent, error: probeErrorText(error) });
    }
    return this.#health;
  }

  close(): void {
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#listeners.clear();
    this.#client?.close();
    this.#client = undefined;
  }

  #set(next: RuntimeHealth): void {
    if (this.#closed || next.answering === this.#health.answering) return;
    const previous = this.#health;
    this.#health = next;
    for (const l of [...this.#listeners]) l(next, previous);
  }

  #schedule(): void {
    if (this.#closed) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.probe().finally(() => this.#schedule());
    }, this.#options.intervalMs);
    this.#timer.unref();
  }
}
