/**
 * A headless Chromium for the tests, driven over the Chrome DevTools Protocol on a pipe
 * (`--remote-debugging-pipe`: messages as JSON, each ended by a NUL byte, written to the browser's
 * fd 3 and read from its fd 4). No port, no browser download: Debian's `chromium`, which
 * scripts/test.sh installs (PODCTL_CHROMIUM names another).
 *
 * Invariants: every call has a bound (a call that gets no answer rejects); `close()` ends the
 * browser (SIGKILL after 5 s) and removes its fresh profile folder; a page's requests are recorded
 * from `Network.requestWillBeSent`, so a test can say that a page loads nothing.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';

/** The browser the tests drive, or undefined when none is installed. */
export function chromiumPath(): string | undefined {
  const candidates = [process.env.PODCTL_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter((p): p is string => typeof p === 'string' && p !== '');
  return candidates.find((p) => existsSync(p));
}

interface Pending {
  resolve(value: Record<string, unknown>): void;
  reject(error: Error): void;
  timer: NodeJS.Timeout;
}

type Listener = (params: Record<string, unknown>, sessionId: string | undefined) => void;

export class Chromium {
  readonly #child: ChildProcess;
  readonly #profile: string;
  readonly #out: Writable;
  readonly #pending = new Map<number, Pending>();
  readonly #listeners = new Map<string, Listener[]>();
  #next = 1;
  #buffer = '';
  #exited = false;

  private constructor(child: ChildProcess, profile: string) {
    this.#child = child;
    this.#profile = profile;
    this.#out = child.stdio[3] as Writable;
    const input = child.stdio[4] as Readable;
    input.setEncoding('utf8');
    input.on('data', (chunk: string) => this.#onData(chunk));
    child.on('exit', () => {
      this.#exited = true;
      for (const [, p] of this.#pending) {
        clearTimeout(p.timer);
        p.reject(new Error('chromium exited'));
      }
      this.#pending.clear();
    });
  }

  /** Starts a headless browser with a fresh profile (the flags that work in a container as root). */
  static async launch(executable = chromiumPath()): Promise<Chromium> {
    if (!executable) throw new Error('no chromium installed (scripts/test.sh installs Debian’s chromium as root)');
    const profile = mkdtempSync(path.join(tmpdir(), 'podctl-chromium-'));
    const child = spawn(
      executable,
      [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--disable-dev-shm-usage',
        '--hide-scrollbars',
        '--remote-debugging-pipe',
        `--user-data-dir=${profile}`,
        'about:blank',
      ],
      { stdio: ['ignore', 'ignore', 'ignore', 'pipe', 'pipe'] },
    );
    const browser = new Chromium(child, profile);
    await browser.send('Browser.getVersion', {}, undefined, 30_000);
    return browser;
  }

  #onData(chunk: string): void {
    this.#buffer += chunk;
    for (let end = this.#buffer.indexOf('\0'); end !== -1; end = this.#buffer.indexOf('\0')) {
      const text = this.#buffer.slice(0, end);
      this.#buffer = this.#buffer.slice(end + 1);
      const message = JSON.parse(text) as { id?: number; result?: Record<string, unknown>; error?: { message: string }; method?: string; params?: Record<string, unknown>; sessionId?: string };
      if (message.id !== undefined) {
        const pending = this.#pending.get(message.id);
        if (!pending) continue;
        this.#pending.delete(message.id);
        clearTimeout(pending.timer);
        if (message.error) pending.reject(new Error(message.error.message));
        else pending.resolve(message.result ?? {});
      } else if (message.method) {
        for (const listener of this.#listeners.get(message.method) ?? []) listener(message.params ?? {}, message.sessionId);
      }
    }
  }

  /** One protocol call (to the browser, or to a page's session), bounded by `timeoutMs`. */
  send(method: string, params: Record<string, unknown> = {}, sessionId?: string, timeoutMs = 30_000): Promise<Record<string, unknown>> {
    if (this.#exited) return Promise.reject(new Error('chromium exited'));
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(new Error(`${method}: no answer from chromium within ${timeoutMs} ms`));
      }, timeoutMs);
      this.#pending.set(id, { resolve, reject, timer });
      this.#out.write(`${JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) })}\0`);
    });
  }

  on(method: string, listener: Listener): void {
    this.#listeners.set(method, [...(this.#listeners.get(method) ?? []), listener]);
  }

  /** A new page (tab) of `width` × `height` CSS pixels, with its network recorded. */
  async newPage(width = 1280, height = 900): Promise<Page> {
    const { targetId } = (await this.send('Target.createTarget', { url: 'about:blank' })) as { targetId: string };
    const { sessionId } = (await this.send('Target.attachToTarget', { targetId, flatten: true })) as { sessionId: string };
    const page = new Page(this, sessionId);
    this.on('Network.requestWillBeSent', (params, from) => {
      if (from === sessionId) page.requests.push(String((params.request as { url?: string } | undefined)?.url ?? ''));
    });
    this.on('Page.loadEventFired', (_params, from) => {
      if (from === sessionId) page.loaded();
    });
    await this.send('Network.enable', {}, sessionId);
    await this.send('Page.enable', {}, sessionId);
    await this.send('Emulation.setDeviceMetricsOverride', { width, height, deviceScaleFactor: 1, mobile: false }, sessionId);
    return page;
  }

  async close(): Promise<void> {
    if (!this.#exited) {
      await this.send('Browser.close', {}, undefined, 5_000).catch(() => undefined);
      await new Promise<void>((resolve) => {
        if (this.#exited) return resolve();
        const kill = setTimeout(() => this.#child.kill('SIGKILL'), 5_000);
        this.#child.once('exit', () => {
          clearTimeout(kill);
          resolve();
        });
      });
    }
    rmSync(this.#profile, { recursive: true, force: true, maxRetries: 3 });
  }
}

export class Page {
  /** Every URL the page asked for, its own document first. */
  readonly requests: string[] = [];
  #onLoad: (() => void) | undefined;
  readonly #browser: Chromium;
  readonly #sessionId: string;

  constructor(browser: Chromium, sessionId: string) {
    this.#browser = browser;
    this.#sessionId = sessionId;
  }

  loaded(): void {
    this.#onLoad?.();
  }

  /** Opens `url` and resolves with the time (ms) until its load event. */
  async open(url: string, timeoutMs = 60_000): Promise<number> {
    const started = performance.now();
    const load = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${url}: no load event within ${timeoutMs} ms`)), timeoutMs);
      this.#onLoad = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    await this.#browser.send('Page.navigate', { url }, this.#sessionId, timeoutMs);
    await load;
    return performance.now() - started;
  }

  /** The value of a JavaScript expression evaluated in the page (by the test, through the protocol). */
  async evaluate<T>(expression: string): Promise<T> {
    const answer = (await this.#browser.send('Runtime.evaluate', { expression, returnByValue: true }, this.#sessionId)) as { result: { value: T }; exceptionDetails?: { text: string } };
    if (answer.exceptionDetails) throw new Error(`evaluate: ${answer.exceptionDetails.text}`);
    return answer.result.value;
  }

  /** A PNG of the whole page (or its first `maxHeight` pixels). */
  async screenshot(maxHeight?: number): Promise<Buffer> {
    const size = await this.evaluate<{ w: number; h: number }>('({ w: document.documentElement.scrollWidth, h: document.documentElement.scrollHeight })');
    const height = maxHeight === undefined ? size.h : Math.min(size.h, maxHeight);
    const { data } = (await this.#browser.send('Page.captureScreenshot', { format: 'png', captureBeyondViewport: true, clip: { x: 0, y: 0, width: size.w, height, scale: 1 } }, this.#sessionId)) as {
      data: string;
    };
    return Buffer.from(data, 'base64');
  }
}
