/**
 * The store's one error type. Every failure the operator can act on (a state dir with the wrong
 * owner or mode, a full disk, a symlink where a file should be) becomes a `StoreError` whose message
 * is one line naming the path and, where there is one, the fix. Programmer errors stay plain Errors.
 */

export type StoreErrorCode =
  /** The state dir (or a folder inside it) has an unsafe owner, mode or type. */
  | 'EPERMS'
  /** No space left on the device: the write was abandoned, the previous file is intact. */
  | 'ENOSPC'
  /** A symlink was found where the store expects a plain file or folder. */
  | 'ESYMLINK'
  /** A UID that cannot name a file. */
  | 'EBADUID'
  /** Any other I/O failure (the message carries the system error). */
  | 'EIO';

export class StoreError extends Error {
  readonly code: StoreErrorCode;
  readonly path: string;

  constructor(code: StoreErrorCode, path: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreError';
    this.code = code;
    this.path = path;
  }
}

/** The errno code of a Node system error, or undefined. */
export function errnoOf(error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error) {
    const code = error.code;
    return typeof code === 'string' ? code : undefined;
  }
  return undefined;
}

/** Wraps a failed write as a one-line StoreError, telling a full disk apart from the rest. */
export function writeError(path: string, error: unknown, what: string): StoreError {
  const code = errnoOf(error);
  if (code === 'ENOSPC' || code === 'EDQUOT') {
    return new StoreError('ENOSPC', path, `no space left on device writing ${what} ${path}; the previous version is kept — free space and retry`, { cause: error });
  }
  if (code === 'ELOOP') {
    return new StoreError('ESYMLINK', path, `refusing to follow a symlink at ${path}`, { cause: error });
  }
  const detail = error instanceof Error ? error.message : String(error);
  if (code === 'EROFS' || code === 'EACCES' || code === 'EPERM') {
    return new StoreError('EPERMS', path, `cannot write ${what} ${path}: ${detail}; the state dir must be writable (choose another with --state-dir)`, { cause: error });
  }
  return new StoreError('EIO', path, `cannot write ${what} ${path}: ${detail}`, { cause: error });
}
