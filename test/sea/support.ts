/**
 * Running the single executable (dist/podctl-linux-x64, built by `npm run sea`) as it runs on a node
 * without Node.js: a copy of it alone in a directory, started from an empty working directory, with
 * a PATH holding no `node` and an empty HOME.
 *
 * Invariants: no test here passes without the executable — without it every suite is skipped and
 * says so LOUDLY, unless PODCTL_REQUIRE_SEA=1 (set by scripts/test.sh when it built one), which
 * turns a missing executable into a failure. Every run is bounded (killed after `timeoutMs`).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { collect, type PodctlRun } from '../e2e/support/cli.js';

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const SEA_PATH = join(REPO_ROOT, 'dist', 'podctl-linux-x64');
/** The Node.js the executable carries: tools/node-lts's `node-lts-26`. */
/** podctl's Node.js flags: those bin/run.js's first line gives node, which the executable carries too. */
export const PODCTL_NODE_FLAGS = readFileSync(join(REPO_ROOT, 'bin', 'run.js'), 'utf8')
  .split('\n', 1)[0]!
  .split(' ')
  .filter((word) => word.startsWith('--'));
export const SEA_NODE_VERSION = `v${(JSON.parse(readFileSync(join(REPO_ROOT, 'tools', 'node-lts', 'node_modules', 'node-lts-26', 'package.json'), 'utf8')) as { version: string }).version}`;
export const PACKAGE_VERSION = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;

function resolveSkip(): string | undefined {
  if (existsSync(SEA_PATH)) return undefined;
  const reason = `${SEA_PATH} is not built (run \`npm run sea\`; \`npm test\` builds it)`;
  if (process.env.PODCTL_REQUIRE_SEA === '1') throw new Error(`sea: PODCTL_REQUIRE_SEA=1 but ${reason}`);
  return reason;
}

export const seaSkipReason = resolveSkip();

/** Prints the skip banner for a test file (once). */
export function warnIfSeaSkipped(file: string): void {
  if (!seaSkipReason) return;
  const line = '#'.repeat(78);
  console.warn([line, `# SINGLE EXECUTABLE SKIPPED: ${file}`, `# ${seaSkipReason}`, '# Nothing about the executable was tested.', line].join('\n'));
}

/** A node without Node.js: the executable alone in its directory, an empty cwd and HOME, PATH without node. */
export interface SeaHost {
  /** The copy of the executable that runs. */
  exe: string;
  /** Its directory (holds nothing else). */
  exeDir: string;
  /** The working directory of every run (empty). */
  cwd: string;
  home: string;
  /** PATH of every run: system directories with no `node` in any of them. */
  path: string;
  root: string;
}

/** Directories of a plain node's PATH that hold no `node` (the test machine has one in /usr/bin or /usr/local/bin). */
function pathWithoutNode(root: string): string {
  const tools = join(root, 'path-bin');
  mkdirSync(tools);
  const dirs = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'].filter((d) => existsSync(d) && !existsSync(join(d, 'node')));
  return [tools, ...dirs].join(':');
}

export function createSeaHost(): SeaHost {
  const root = mkdtempSync(join(tmpdir(), 'podctl-sea-'));
  const exeDir = join(root, 'opt');
  const cwd = join(root, 'cwd');
  const home = join(root, 'home');
  for (const d of [exeDir, cwd, home]) mkdirSync(d);
  const exe = join(exeDir, 'podctl');
  copyFileSync(SEA_PATH, exe);
  return { exe, exeDir, cwd, home, path: pathWithoutNode(root), root };
}

export function removeSeaHost(host: SeaHost | undefined): void {
  if (host) rmSync(host.root, { recursive: true, force: true });
}

/** What is in a directory (names), to check that nothing was written beside the executable. */
export function entries(dir: string): string[] {
  return readdirSync(dir).sort();
}

/** The environment of a run: nothing inherited that points at Node.js or a runtime. */
export function seaEnv(host: SeaHost, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { PATH: host.path, HOME: host.home, NO_COLOR: '1', LANG: 'C.UTF-8', ...extra };
}

function spawnSea(host: SeaHost, args: string[], extra: Record<string, string> = {}): ChildProcess {
  return spawn(host.exe, args, { cwd: host.cwd, env: seaEnv(host, extra), stdio: ['ignore', 'pipe', 'pipe'] });
}

export function runSea(host: SeaHost, args: string[], options: { timeoutMs?: number; env?: Record<string, string> } = {}): Promise<PodctlRun> {
  return collect(spawnSea(host, args, options.env), options.timeoutMs ?? 60_000);
}

/** `which node` under the host's PATH (a shell from /bin, not Node.js). */
export function whichNode(host: SeaHost): number | null {
  return spawnSync('/bin/sh', ['-c', 'command -v node'], { env: seaEnv(host) }).status;
}
