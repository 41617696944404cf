/**
 * One HTTP/1.1 GET over a plain TCP connection (node:net), for the kubelet's healthz: `status` and
 * `kill` ask it at every start, and node:http costs more to load than the whole probe.
 *
 * Contract: one request (`Connection: close`), one answer: its status code and body, the body read
 * by Content-Length, chunked transfer coding or the end of the connection. `timeoutMs` bounds each
 * wait for the peer (as node:http's `timeout`: no byte received, nor the connection made, for that
 * long), counted in time this process could hear it (`silenceBound`), and the answer is at most
 * MAX_ANSWER_BYTES; a connection error rejects with the socket's error (its `code`:
 * ECONNREFUSED, EHOSTUNREACH, ETIMEDOUT for the bound…), an answer that is not HTTP/1.x with
 * HPE_INVALID (as node:http's parser), one cut short with ECONNRESET. The socket is always destroyed.
 */
import net from 'node:net';
import { silenceBound } from '../lib/silence-bound.js';

/** A healthz answers "ok"; anything much longer is not one. */
const MAX_ANSWER_BYTES = 64 * 1024;

export interface PlainAnswer {
  status: number;
  body: string;
}

function fail(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code });
}

/** The body of a chunked answer, or undefined while its last chunk has not arrived. */
function unchunk(raw: string): string | undefined {
  let body = '';
  let at = 0;
  for (;;) {
    const lineEnd = raw.indexOf('\r\n', at);
    if (lineEnd < 0) return undefined;
    const size = Number.parseInt(raw.slice(at, lineEnd), 16);
    if (!Number.isFinite(size) || size < 0) throw fail('HPE_INVALID_CHUNK_SIZE', 'invalid chunk size');
    if (size === 0) return body;
    if (raw.length < lineEnd + 2 + size + 2) return undefined;
    body += raw.slice(lineEnd + 2, lineEnd + 2 + size);
    at = lineEnd + 2 + size + 2;
  }
}

/** The answer in `raw` (latin1) once complete, undefined while more is expected (`ended`: nothing more comes). */
function parseAnswer(raw: string, ended: boolean): PlainAnswer | undefined {
  const head = raw.indexOf('\r\n\r\n');
  if (head < 0) {
    if (ended) throw fail('ECONNRESET', 'the connection closed before a complete answer');
    return undefined;
  }
  const [statusLine = '', ...fields] = raw.slice(0, head).split('\r\n');
  const status = /^HTTP\/1\.[01] (\d{3})(?: |$)/.exec(statusLine);
  if (!status) throw fail('HPE_INVALID_CONSTANT', `not an HTTP/1.x answer: ${JSON.stringify(statusLine.slice(0, 40))}`);
  const header = (name: string): string | undefined => {
    const field = fields.find((f) => f.slice(0, f.indexOf(':')).trim().toLowerCase() === name);
    return field?.slice(field.indexOf(':') + 1).trim();
  };
  const rest = raw.slice(head + 4);
  let body: string | undefined;
  if (header('transfer-encoding')?.toLowerCase().includes('chunked')) body = unchunk(rest);
  else if (header('content-length') !== undefined) {
    const length = Number(header('content-length'));
    if (!Number.isInteger(length) || length < 0) throw fail('HPE_INVALID_CONTENT_LENGTH', 'invalid Content-Length');
    body = rest.length >= length ? rest.slice(0, length) : undefined;
  } else body = ended ? rest : undefined;
  if (body === undefined && ended) throw fail('ECONNRESET', 'the connection closed before the whole body');
  return body === undefined ? undefined : { status: Number(status[1]), body: Buffer.from(body, 'latin1').toString('utf8') };
}

/** GETs `url` (http: only) and resolves to its answer; see the contract above. */
export function plainGet(url: URL, timeoutMs: number): Promise<PlainAnswer> {
  if (url.protocol !== 'http:') return Promise.reject(fail('ERR_INVALID_PROTOCOL', `Protocol "${url.protocol}" not supported. Expected "http:"`));
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port: Number(url.port || 80) });
    let raw = '';
    let done = false;
    const silence = silenceBound(timeoutMs, () => settle(fail('ETIMEDOUT', `no answer within ${timeoutMs} ms`)));
    const settle = (error: Error | undefined, answer?: PlainAnswer): void => {
      if (done) return;
      done = true;
      silence.stop();
      socket.destroy();
      if (error) reject(error);
      else if (answer) resolve(answer);
    };
    const take = (ended: boolean): void => {
      if (done) return;
      try {
        const answer = parseAnswer(raw, ended);
        if (answer) settle(undefined, answer);
      } catch (error) {
        settle(error as Error);
      }
    };
    socket.setEncoding('latin1');
    socket.once('connect', () => {
      silence.heard();
      socket.write(`GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\nConnection: close\r\n\r\n`, 'latin1');
    });
    socket.on('data', (chunk: string) => {
      silence.heard();
      raw += chunk;
      if (raw.length > MAX_ANSWER_BYTES) settle(fail('HPE_HEADER_OVERFLOW', `an answer over ${MAX_ANSWER_BYTES} bytes`));
      else take(false);
    });
    socket.once('end', () => take(true));
    socket.once('error', (error) => settle(error));
    // closed without 'end' or 'error' (destroyed elsewhere): nothing more will come
    socket.once('close', () => take(true));
  });
}
