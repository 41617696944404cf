/**
 * The agent's mark on a state dir, `<stateDir>/agent.pid`: which `podctl agent` process serves it
 * (its PID, kernel start time and PID namespace, as a lease records its holder).
 *
 * Invariants:
 * - At most one live agent holds the mark: it is created exclusively (a complete file linked into
 *   place, never a half-written one), and a second agent finds the first one's live mark and is
 *   refused, naming its PID.
 * - A mark whose process is gone (or whose PID now belongs to another process) is stale: the next
 *   agent replaces it. Only the process that holds a mark removes it.
 * - Reading a mark never changes it; a damaged mark reads as no agent.
 */
import * as fsp from '../lib/fs-async.js';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { isIdentityAlive, processIdentity } from './proc.js';
import { agentMarkSchema, checkRecord, type AgentMark } from './records.js';
import { errnoOf } from './errors.js';

const MARK_FILE = 'agent.pid';

export type { AgentMark } from './records.js';

function markPath(stateDir: string): string {
  return join(stateDir, MARK_FILE);
}

async function readMark(path: string): Promise<AgentMark | undefined> {
  try {
    const checked = checkRecord(agentMarkSchema, JSON.parse(await fsp.readFile(path, 'utf8')));
    return checked.ok ? checked.value : undefined;
  } catch {
    return undefined;
  }
}

/** The live agent serving this state dir, if one does. */
export async function liveAgent(stateDir: string): Promise<AgentMark | undefined> {
  const mark = await readMark(markPath(stateDir));
  return mark && mark.pid !== process.pid && isIdentityAlive(mark) ? mark : undefined;
}

export type AgentClaim = { claimed: true; release: () => Promise<void> } | { claimed: false; holder: AgentMark };

/**
 * Marks the state dir as served by this process, unless a live agent serves it already (then its
 * mark is returned). A stale mark is replaced (at most twice: another agent may claim it meanwhile).
 */
export async function claimAgentMark(stateDir: string): Promise<AgentClaim> {
  const path = markPath(stateDir);
  const identity = processIdentity();
  const mark: AgentMark = { pid: identity.pid, startTicks: identity.startTicks, startedAt: identity.startedAt, ...(identity.pidNs !== undefined ? { pidNs: identity.pidNs } : {}) };
  const temp = join(stateDir, `.${MARK_FILE}.${process.pid}-${randomBytes(6).toString('hex')}`);
  await fsp.writeFile(temp, `${JSON.stringify(mark)}\n`, { mode: 0o600 });
  try {
    for (let attempt = 0; attempt < 3; attempt += 1) {
      try {
        await fsp.link(temp, path);
        return { claimed: true, release: () => releaseMark(path, mark) };
      } catch (error) {
        if (errnoOf(error) !== 'EEXIST') throw error;
      }
      const holder = await readMark(path);
      if (holder && isIdentityAlive(holder)) return { claimed: false, holder };
      // stale (or damaged): removed, then claimed again
      await fsp.unlink(path).catch(() => undefined);
    }
    const holder = await readMark(path);
    if (holder) return { claimed: false, holder };
    throw new Error(`could not mark ${path} as this agent's`);
  } finally {
    await fsp.unlink(temp).catch(() => undefined);
  }
}

/** Removes the mark if it is still this process's. */
async function releaseMark(path: string, mark: AgentMark): Promise<void> {
  const current = await readMark(path);
  if (current?.pid === mark.pid && current.startTicks === mark.startTicks) await fsp.unlink(path).catch(() => undefined);
}
