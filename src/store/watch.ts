/**
 * Folder watching for the store: tells a session promptly that another process changed a file.
 *
 * `fs.watch` (inotify on Linux) delivers a name within milliseconds of a rename into the folder;
 * it may coalesce or drop events, and does not exist on every filesystem, so a slow re-scan runs
 * beside it as a safety net. Temporary names (leading '.') are ignored: only completed renames
 * matter, and so do only 'rename' events: every store file is created or replaced by a rename
 * (or removed), while 'change' events are content or attribute updates in place — in the store
 * only lease heartbeats (mtime), which must not wake anyone. The watcher never throws into its
 * caller; a failing `fs.watch` degrades to the re-scan.
 */
import { watch, type FSWatcher } from 'node:fs';

export interface FolderWatchOptions {
  /** Called with each (non-hidden) name that changed; may be called more than once per change. */
  onName: (name: string) => void;
  /** Called on every safety re-scan tick (the consumer lists the folder itself). */
  onRescan: () => void;
  /** Safety re-scan period, ms. */
  rescanMs: number;
}

export interface FolderWatch {
  close(): void;
}

export function watchFolder(dir: string, options: FolderWatchOptions): FolderWatch {
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(dir, { persistent: false }, (event, filename) => {
      if (event !== 'rename') return;
      if (typeof filename !== 'string' || filename.length === 0) {
        options.onRescan();
        return;
      }
      if (!filename.startsWith('.')) options.onName(filename);
    });
    watcher.on('error', () => {
      watcher?.close();
      watcher = undefined;
    });
  } catch {
    watcher = undefined;
  }
  const timer = setInterval(options.onRescan, options.rescanMs);
  timer.unref();
  return {
    close() {
      clearInterval(timer);
      watcher?.close();
      watcher = undefined;
    },
  };
}
