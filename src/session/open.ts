/**
 * `openSession()`: opens the node session — the state dir (created and checked) and the runtime
 * side by side, then the session's parts (session.ts), then its watchers (none when read-only).
 *
 * Invariants: a failing open leaks nothing (a runtime connected beside a state dir that failed is
 * closed again); a state-dir error is reported first; errors are one line (StoreError,
 * EndpointError) that the CLI maps to exit codes. Heavy modules stay out: the CRI client is
 * imported only when the default runtime is used (cri-runtime.ts), the API client only when a
 * kubeconfig is.
 */
import path from 'node:path';
import type { Logger, NodeSession, RuntimeStep, SessionOptions } from '../domain/session-api.js';
import { openStore } from '../store/index.js';
import type { SessionRuntime } from './runtime.js';
import type { SessionSeams } from './seams.js';
import { Session } from './session.js';

export type { SessionSeams } from './seams.js';
export type { RuntimePodRecord, SessionRuntime } from './runtime.js';

/** Builds the default CRI-backed runtime (lazy: grpc-js is loaded only here). */
async function connectDefaultRuntime(
  options: SessionOptions,
  stateDir: string,
  isEvicted: (uid: string) => boolean,
  needsExitCodes: (uid: string) => boolean,
  onStep: (uid: string, step: RuntimeStep) => void,
): Promise<SessionRuntime> {
  const { connectRuntime } = await import('./cri-runtime.js');
  return connectRuntime(options, stateDir, {
    isEvicted,
    onStep,
    ...(options.readOnly ? { readOnly: true } : {}),
    ...(options.exitDetails === 'driven' ? { exitDetailsFor: needsExitCodes } : {}),
    ...(options.onRuntimeAsked ? { onAsked: options.onRuntimeAsked } : {}),
    ...(options.runtimeEventsFromFirstWait ? { eventsLater: true } : {}),
  });
}

export async function openSession(options: SessionOptions, seams: SessionSeams = {}): Promise<NodeSession> {
  const log: Logger = options.log ?? (() => {});
  let session: Session | undefined;
  const [opened, connected] = await Promise.allSettled([
    openStore({
      stateDir: options.stateDir,
      report: (message) => log('warn', message),
      ...(seams.storeOps ? { ops: seams.storeOps } : {}),
      ...(options.clock ? { clock: () => options.clock!.now() } : {}),
      ...(options.readOnly ? { readOnly: true } : {}),
    }),
    seams.runtime ??
      connectDefaultRuntime(
        options,
        path.resolve(options.stateDir),
        (uid) => session?.isEvicted(uid) ?? false,
        (uid) => session?.needsExitCodes(uid) ?? false,
        (uid, step) => session?.noteRuntimeStep(uid, step),
      ),
  ]);
  if (opened.status === 'rejected') {
    if (connected.status === 'fulfilled' && !seams.runtime) await connected.value.close().catch(() => undefined);
    throw opened.reason;
  }
  if (connected.status === 'rejected') throw connected.reason;
  session = new Session(options, seams, opened.value, connected.value, log);
  // A read-only session acts on nothing: no inbox, checkpoint or lease watchers, no heartbeat.
  if (!options.readOnly) session.start();
  return session;
}
