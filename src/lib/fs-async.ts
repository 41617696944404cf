/**
 * Node's callback `fs` as promises, for the modules on every command's path (the store, the
 * session's hand-off): the first use of `node:fs/promises` compiles a dozen of Node's own modules
 * (its FileHandle, streams, readline for `readLines`, the REPL's history), which these functions do
 * not need.
 *
 * Contract: each function takes the arguments, resolves to the results and rejects with the errors
 * (code, syscall, path) of its `fs/promises` namesake, for the forms podctl uses. `open` resolves to
 * a `FileHandle` of the three methods the store uses (write, sync, close) over the file descriptor;
 * its `close` closes the descriptor once (a second call resolves and does nothing, as a
 * FileHandle's does), so a descriptor number reused by another open is never closed by mistake.
 */
import fs from 'node:fs';
import { promisify } from 'node:util';

export const access = promisify(fs.access);
export const link = promisify(fs.link);
export const lstat = promisify(fs.lstat);
export const mkdir = promisify(fs.mkdir);
export const readFile = promisify(fs.readFile);
export const readdir = promisify(fs.readdir);
export const realpath = promisify(fs.realpath);
export const rename = promisify(fs.rename);
export const rm = promisify(fs.rm);
export const stat = promisify(fs.stat);
export const unlink = promisify(fs.unlink);
export const utimes = promisify(fs.utimes);
export const writeFile = promisify(fs.writeFile);

/** What the store does with an open file (a subset of fs/promises' FileHandle). */
export interface FileHandle {
  readonly fd: number;
  write(data: Uint8Array, offset: number, length: number, position: number): Promise<{ bytesWritten: number }>;
  sync(): Promise<void>;
  close(): Promise<void>;
}

class DescriptorHandle implements FileHandle {
  #closed = false;
  constructor(readonly fd: number) {}

  write(data: Uint8Array, offset: number, length: number, position: number): Promise<{ bytesWritten: number }> {
    return new Promise((resolve, reject) => {
      fs.write(this.fd, data, offset, length, position, (error, bytesWritten) => (error ? reject(error) : resolve({ bytesWritten })));
    });
  }

  sync(): Promise<void> {
    return new Promise((resolve, reject) => fs.fsync(this.fd, (error) => (error ? reject(error) : resolve())));
  }

  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    return new Promise((resolve, reject) => fs.close(this.fd, (error) => (error ? reject(error) : resolve())));
  }
}

/** Opens `path` with numeric `flags` (and `mode` when it creates the file). */
export function open(path: string, flags: number, mode?: number): Promise<FileHandle> {
  return new Promise((resolve, reject) => {
    fs.open(path, flags, mode, (error, fd) => (error ? reject(error) : resolve(new DescriptorHandle(fd))));
  });
}
