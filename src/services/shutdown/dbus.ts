/**
 * A minimal D-Bus client: the wire protocol over a unix socket, enough for the shutdown guard to call
 * logind's methods, read its properties and receive its signals. Little-endian messages; the body
 * of a call is strings only (what Hello, AddMatch, Get and ListInhibitors take); replies and
 * signals of any signature are read.
 *
 * Invariants:
 * - Every call has a deadline; an error reply becomes a `DBusError` naming the error and the method.
 * - The connection never negotiates file-descriptor passing: Node cannot receive a descriptor over a
 *   socket, so a reply carrying one (logind's Inhibit) is out of its reach by design; the guard
 *   holds its lock under `systemd-inhibit` (inhibit.ts).
 * - A closed connection fails every pending call at once and is said once through `closed`.
 *
 * Why not a library: the pure-JS clients on npm (dbus-next and its forks) carry XML introspection,
 * stream and big-integer packages the single executable would bundle for four calls and one
 * signal, and pass file descriptors only through a native add-on; the protocol subset is small.
 */
import net from 'node:net';
import { userInfo } from 'node:os';

/** The system bus unless `DBUS_SYSTEM_BUS_ADDRESS` names another (sd-bus and libdbus read the same). */
export const DEFAULT_SYSTEM_BUS = 'unix:path=/run/dbus/system_bus_socket';
const MAX_MESSAGE_BYTES = 128 * 1024 * 1024;

class DBusError extends Error {
  constructor(
    /** The D-Bus error name (org.freedesktop.DBus.Error.…). */
    readonly errorName: string,
    message: string,
  ) {
    super(message);
  }
}

/** The socket a bus address names: the first `unix:` entry with `path=` or `abstract=`. */
export function socketOfAddress(address: string): string {
  for (const entry of address.split(';')) {
    const [transport, rest = ''] = splitOnce(entry, ':');
    if (transport !== 'unix') continue;
    const keys = new Map(
      rest
        .split(',')
        .map((kv) => splitOnce(kv, '='))
        .map(([k, v]) => [k, decodeURIComponent(v ?? '')] as const),
    );
    const path = keys.get('path');
    if (path) return path;
    const abstract = keys.get('abstract');
    if (abstract) return `\0${abstract}`;
  }
  throw new Error(`D-Bus address "${address}" names no unix socket (path= or abstract=)`);
}

function splitOnce(text: string, sep: string): [string, string | undefined] {
  const at = text.indexOf(sep);
  return at < 0 ? [text, undefined] : [text.slice(0, at), text.slice(at + 1)];
}

// ---- marshalling ------------------------------------------------------------------------------

const ALIGN: Record<string, number> = { y: 1, b: 4, n: 2, q: 2, i: 4, u: 4, x: 8, t: 8, d: 8, h: 4, s: 4, o: 4, g: 1, a: 4, '(': 8, '{': 8, v: 1 };

/** The first complete type of `signature` from `at`, and where the next one starts. */
function oneType(signature: string, at: number): [string, number] {
  const c = signature[at];
  if (c === 'a') {
    const [, end] = oneType(signature, at + 1);
    return [signature.slice(at, end), end];
  }
  if (c === '(' || c === '{') {
    const close = c === '(' ? ')' : '}';
    let i = at + 1;
    while (signature[i] !== close) {
      if (i >= signature.length) throw new Error(`D-Bus signature "${signature}" is not closed`);
      i = oneType(signature, i)[1];
    }
    return [signature.slice(at, i + 1), i + 1];
  }
  if (c === undefined || !(c in ALIGN)) throw new Error(`D-Bus signature "${signature}" has an unknown type at ${at}`);
  return [c, at + 1];
}

function typesOf(signature: string): string[] {
  const types: string[] = [];
  for (let at = 0; at < signature.length;) {
    const [type, next] = oneType(signature, at);
    types.push(type);
    at = next;
  }
  return types;
}

class Writer {
  #bytes: number[] = [];
  get length(): number {
    return this.#bytes.length;
  }
  align(n: number): void {
    while (this.#bytes.length % n !== 0) this.#bytes.push(0);
  }
  byte(value: number): void {
    this.#bytes.push(value & 0xff);
  }
  uint32(value: number): void {
    this.align(4);
    this.#bytes.push(value & 0xff, (value >>> 8) & 0xff, (value >>> 16) & 0xff, (value >>> 24) & 0xff);
  }
  setUint32(at: number, value: number): void {
    this.#bytes.splice(at, 4, value & 0xff, (value >>> 8) & 0xff, (value >>> 16) & 0xff, (value >>> 24) & 0xff);
  }
  string(value: string): void {
    const data = Buffer.from(value, 'utf8');
    this.uint32(data.length);
    this.#bytes.push(...data, 0);
  }
  signature(value: string): void {
    this.byte(value.length);
    this.#bytes.push(...Buffer.from(value, 'latin1'), 0);
  }
  bytes(): Buffer {
    return Buffer.from(this.#bytes);
  }
}

class Reader {
  #at = 0;
  constructor(readonly buffer: Buffer) {}
  align(n: number): void {
    this.#at = Math.ceil(this.#at / n) * n;
  }
  seek(at: number): void {
    this.#at = at;
  }
  get at(): number {
    return this.#at;
  }
  read(type: string): unknown {
    this.align(ALIGN[type[0]!] ?? 1);
    const b = this.buffer;
    const c = type[0];
    const need = (n: number): number => {
      if (this.#at + n > b.length) throw new Error('D-Bus message ends inside a value');
      const at = this.#at;
      this.#at += n;
      return at;
    };
    switch (c) {
      case 'y':
        return b.readUInt8(need(1));
      case 'b':
        return b.readUInt32LE(need(4)) !== 0;
      case 'n':
        return b.readInt16LE(need(2));
      case 'q':
        return b.readUInt16LE(need(2));
      case 'i':
        return b.readInt32LE(need(4));
      case 'u':
      case 'h':
        return b.readUInt32LE(need(4));
      case 'x':
        return b.readBigInt64LE(need(8));
      case 't':
        return b.readBigUInt64LE(need(8));
      case 'd':
        return b.readDoubleLE(need(8));
      case 's':
      case 'o': {
        const length = b.readUInt32LE(need(4));
        const at = need(length + 1);
        return b.toString('utf8', at, at + length);
      }
      case 'g': {
        const length = b.readUInt8(need(1));
        const at = need(length + 1);
        return b.toString('latin1', at, at + length);
      }
      case 'v': {
        const signature = this.read('g') as string;
        return this.read(signature);
      }
      case 'a': {
        const length = b.readUInt32LE(need(4));
        const element = type.slice(1);
        this.align(ALIGN[element[0]!] ?? 1);
        const end = this.#at + length;
        if (end > b.length) throw new Error('D-Bus array runs past its message');
        const items: unknown[] = [];
        while (this.#at < end) items.push(this.read(element));
        return element.startsWith('{') ? new Map(items as [unknown, unknown][]) : items;
      }
      case '(':
      case '{':
        return typesOf(type.slice(1, -1)).map((t) => this.read(t));
      default:
        throw new Error(`D-Bus type "${type}" cannot be read`);
    }
  }
}

// ---- messages ---------------------------------------------------------------------------------

const enum Kind {
  Call = 1,
  Return = 2,
  Error = 3,
  Signal = 4,
}
const FIELD = { path: 1, interface: 2, member: 3, errorName: 4, replySerial: 5, destination: 6, sender: 7, signature: 8 } as const;

export interface DBusCall {
  destination: string;
  path: string;
  interface: string;
  member: string;
  /** Strings only (`s` arguments). */
  args?: string[];
}

export interface DBusSignal {
  sender: string;
  path: string;
  interface: string;
  member: string;
  body: unknown[];
}

interface Message {
  kind: number;
  serial: number;
  fields: Map<number, unknown>;
  body: unknown[];
}

function encodeCall(call: DBusCall, serial: number): Buffer {
  const args = call.args ?? [];
  const body = new Writer();
  for (const arg of args) body.string(arg);
  const w = new Writer();
  w.byte(0x6c); // 'l': little-endian
  w.byte(Kind.Call);
  w.byte(0);
  w.byte(1);
  w.uint32(body.length);
  w.uint32(serial);
  const lengthAt = w.length;
  w.uint32(0);
  const fieldsStart = w.length;
  const field = (code: number, type: 'o' | 's' | 'g', value: string): void => {
    w.align(8);
    w.byte(code);
    w.signature(type);
    if (type === 'g') w.signature(value);
    else w.string(value);
  };
  field(FIELD.path, 'o', call.path);
  field(FIELD.interface, 's', call.interface);
  field(FIELD.member, 's', call.member);
  field(FIELD.destination, 's', call.destination);
  if (args.length > 0) field(FIELD.signature, 'g', 's'.repeat(args.length));
  w.setUint32(lengthAt, w.length - fieldsStart);
  w.align(8);
  return Buffer.concat([w.bytes(), body.bytes()]);
}

/** The length of the complete message at the start of `buffer`, or undefined while it is incomplete. */
function messageLength(buffer: Buffer): number | undefined {
  if (buffer.length < 16) return undefined;
  if (buffer[0] !== 0x6c && buffer[0] !== 0x42) throw new Error('D-Bus message with an unknown byte order');
  const little = buffer[0] === 0x6c;
  const bodyLength = little ? buffer.readUInt32LE(4) : buffer.readUInt32BE(4);
  const fieldsLength = little ? buffer.readUInt32LE(12) : buffer.readUInt32BE(12);
  const total = Math.ceil((16 + fieldsLength) / 8) * 8 + bodyLength;
  if (total > MAX_MESSAGE_BYTES) throw new Error(`D-Bus message of ${total} bytes is too large`);
  return buffer.length >= total ? total : undefined;
}

function decodeMessage(buffer: Buffer): Message {
  // a bus daemon speaks its peer's order back; a big-endian message is not expected from one
  if (buffer[0] !== 0x6c) throw new Error('D-Bus message in big-endian order is not supported');
  const r = new Reader(buffer);
  const kind = buffer.readUInt8(1);
  const serial = buffer.readUInt32LE(8);
  r.seek(12);
  const fields = new Map((r.read('a(yv)') as [number, unknown][]).map(([code, value]) => [code, value] as const));
  r.align(8);
  const signature = (fields.get(FIELD.signature) as string | undefined) ?? '';
  const body = typesOf(signature).map((t) => r.read(t));
  return { kind, serial, fields, body };
}

// ---- the connection ---------------------------------------------------------------------------

interface Pending {
  resolve: (body: unknown[]) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
  what: string;
}

export class DBusConnection {
  readonly #socket: net.Socket;
  #serial = 0;
  #buffer: Buffer = Buffer.alloc(0);
  readonly #pending = new Map<number, Pending>();
  readonly #listeners = new Set<(signal: DBusSignal) => void>();
  #closedWith: Error | undefined;
  readonly #closeListeners = new Set<(error: Error) => void>();
  /** The unique name the bus gave this connection (after Hello). */
  uniqueName = '';

  private constructor(socket: net.Socket) {
    this.#socket = socket;
    socket.on('data', (chunk: Buffer) => this.#receive(chunk));
    socket.on('error', (error) => this.#fail(error));
    socket.on('close', () => this.#fail(new Error('the D-Bus connection closed')));
  }

  /** Connects, authenticates (EXTERNAL: the process's uid) and says Hello, within `timeoutMs`. */
  static async open(address: string, timeoutMs: number): Promise<DBusConnection> {
    const path = socketOfAddress(address);
    const socket = net.connect(path);
    socket.setNoDelay(true);
    const timer = setTimeout(() => socket.destroy(new Error(`no answer from the D-Bus at ${address} within ${timeoutMs} ms`)), timeoutMs);
    try {
      await authenticate(socket, address);
    } catch (error) {
      socket.destroy();
      throw error;
    } finally {
      clearTimeout(timer);
    }
    const connection = new DBusConnection(socket);
    try {
      const [name] = await connection.call({ destination: 'org.freedesktop.DBus', path: '/org/freedesktop/DBus', interface: 'org.freedesktop.DBus', member: 'Hello' }, timeoutMs);
      connection.uniqueName = String(name);
    } catch (error) {
      connection.close();
      throw error;
    }
    return connection;
  }

  /** Calls a method; resolves with the reply's body, rejects with a DBusError or at the deadline. */
  call(call: DBusCall, timeoutMs: number): Promise<unknown[]> {
    if (this.#closedWith) return Promise.reject(this.#closedWith);
    const serial = ++this.#serial;
    const what = `${call.interface}.${call.member}`;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(serial);
        reject(new Error(`${what}: no answer on the D-Bus within ${timeoutMs} ms`));
      }, timeoutMs);
      this.#pending.set(serial, { resolve, reject, timer, what });
      this.#socket.write(encodeCall(call, serial));
    });
  }

  /** Receives the bus's signals that match `rule` (a D-Bus match rule) from now on. */
  async subscribe(rule: string, listener: (signal: DBusSignal) => void, timeoutMs: number): Promise<() => void> {
    this.#listeners.add(listener);
    try {
      await this.call({ destination: 'org.freedesktop.DBus', path: '/org/freedesktop/DBus', interface: 'org.freedesktop.DBus', member: 'AddMatch', args: [rule] }, timeoutMs);
    } catch (error) {
      this.#listeners.delete(listener);
      throw error;
    }
    return () => this.#listeners.delete(listener);
  }

  /** Called once when the connection ends (closed by either side, or broken). */
  onClose(listener: (error: Error) => void): () => void {
    if (this.#closedWith) {
      listener(this.#closedWith);
      return () => undefined;
    }
    this.#closeListeners.add(listener);
    return () => this.#closeListeners.delete(listener);
  }

  close(): void {
    this.#fail(new Error('the D-Bus connection was closed'));
    this.#socket.destroy();
  }

  #receive(chunk: Buffer): void {
    this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk]);
    try {
      for (let length = messageLength(this.#buffer); length !== undefined; length = messageLength(this.#buffer)) {
        const message = decodeMessage(this.#buffer.subarray(0, length));
        this.#buffer = this.#buffer.subarray(length);
        this.#dispatch(message);
      }
    } catch (error) {
      this.#socket.destroy(error as Error);
    }
  }

  #dispatch(message: Message): void {
    if (message.kind === Kind.Return || message.kind === Kind.Error) {
      const serial = message.fields.get(FIELD.replySerial) as number | undefined;
      const pending = serial === undefined ? undefined : this.#pending.get(serial);
      if (!pending || serial === undefined) return;
      this.#pending.delete(serial);
      clearTimeout(pending.timer);
      if (message.kind === Kind.Return) pending.resolve(message.body);
      else {
        const name = text(message.fields.get(FIELD.errorName)) || 'org.freedesktop.DBus.Error.Failed';
        pending.reject(new DBusError(name, `${pending.what}: ${name}${typeof message.body[0] === 'string' ? `: ${message.body[0]}` : ''}`));
      }
      return;
    }
    if (message.kind === Kind.Signal) {
      const signal: DBusSignal = {
        sender: text(message.fields.get(FIELD.sender)),
        path: text(message.fields.get(FIELD.path)),
        interface: text(message.fields.get(FIELD.interface)),
        member: text(message.fields.get(FIELD.member)),
        body: message.body,
      };
      for (const listener of this.#listeners) listener(signal);
    }
    // method calls to this connection (Peer.Ping from the bus) go unanswered: it serves nothing
  }

  #fail(error: Error): void {
    if (this.#closedWith) return;
    this.#closedWith = error;
    for (const pending of this.#pending.values()) {
      clearTimeout(pending.timer);
      pending.reject(new Error(`${pending.what}: ${error.message}`));
    }
    this.#pending.clear();
    for (const listener of this.#closeListeners) listener(error);
    this.#closeListeners.clear();
  }
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/** SASL EXTERNAL with the process's uid, as every D-Bus client on a unix socket does. */
function authenticate(socket: net.Socket, address: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let answer = '';
    const done = (error?: Error): void => {
      socket.off('data', onData);
      socket.off('error', done);
      socket.off('close', onClose);
      if (error) reject(error);
      else resolve();
    };
    const onClose = (): void => done(new Error(`the D-Bus at ${address} closed the connection before it accepted this client`));
    const onData = (chunk: Buffer): void => {
      answer += chunk.toString('latin1');
      if (!answer.includes('\r\n')) return;
      if (answer.startsWith('OK ')) {
        socket.write('BEGIN\r\n');
        done();
      } else done(new Error(`the D-Bus at ${address} refused this client (uid ${userInfo().uid}): ${answer.trim()}`));
    };
    socket.on('data', onData);
    socket.on('error', done);
    socket.on('close', onClose);
    const uid = String(process.getuid?.() ?? userInfo().uid);
    socket.write(`\0AUTH EXTERNAL ${Buffer.from(uid, 'latin1').toString('hex')}\r\n`);
  });
}
