/**
 * Progress and logs on stderr, so stdout carries only results.
 *
 * Invariants:
 * - Nothing is written below the chosen log level; progress counts as `info`.
 * - On a TTY, progress is one status line rewritten in place (no spinners, no timers of its own);
 *   elsewhere (pipes, CI logs) each distinct progress line is printed once, as plain text.
 * - A log line first clears a pending status line, so the two never interleave mid-line.
 */
import type { LogLevel, Logger } from '../domain/session-api.js';

const RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

export interface ReporterStream {
  write(chunk: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

export class Reporter {
  readonly level: LogLevel;
  #stream: ReporterStream;
  #statusShown = false;
  #lastProgress = '';

  constructor(level: LogLevel, stream: ReporterStream = process.stderr) {
    this.level = level;
    this.#stream = stream;
  }

  get interactive(): boolean {
    return this.#stream.isTTY === true;
  }

  enabled(level: LogLevel): boolean {
    return RANK[level] >= RANK[this.level];
  }

  log(level: LogLevel, message: string): void {
    if (!this.enabled(level)) return;
    this.#clearStatus();
    const prefix = level === 'info' ? '' : `${level === 'warn' ? 'warning' : level}: `;
    this.#stream.write(`${prefix}${message}\n`);
  }

  debug(message: string): void {
    this.log('debug', message);
  }
  info(message: string): void {
    this.log('info', message);
  }
  warn(message: string): void {
    this.log('warn', message);
  }

  /** A progress line: rewritten in place on a TTY, printed once per change elsewhere. */
  progress(line: string): void {
    if (!this.enabled('info') || line === this.#lastProgress) return;
    this.#lastProgress = line;
    if (this.interactive) {
      const width = Math.max(20, (this.#stream.columns || 100) - 1);
      const shown = line.length > width ? `${line.slice(0, width - 1)}…` : line;
      this.#stream.write(`\r\u001b[2K${shown}`);
      this.#statusShown = true;
    } else {
      this.#stream.write(`${line}\n`);
    }
  }

  /** Ends a status line (keeps its last text on screen). */
  done(): void {
    if (this.#statusShown) this.#stream.write('\n');
    this.#statusShown = false;
    this.#lastProgress = '';
  }

  /** The session's logger, routed through this reporter. */
  asLogger(): Logger {
    return (level, message) => this.log(level, message);
  }

  #clearStatus(): void {
    if (!this.#statusShown) return;
    this.#stream.write('\r\u001b[2K');
    this.#statusShown = false;
    this.#lastProgress = '';
  }
}

/** A reporter that drops everything (services called from tests or other services). */
export function silentReporter(): Reporter {
  return new Reporter('error', { write: () => true });
}
