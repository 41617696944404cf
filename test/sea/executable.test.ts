/**
 * The single executable (dist/podctl-linux-x64) on a node without Node.js: a copy alone in its
 * directory, run from an empty working directory with a PATH that holds no `node` and an empty HOME.
 * `--version`, `--help` and `version --client` need nothing else; `version`, `status`, `kill` (waiting
 * and handed to a background driver) and `drain --dry-run` run against the real containerd test node.
 * After each test, nothing was written beside the executable, in the working directory or in HOME.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { describeContainerd } from '../e2e/support/env.js';
import { useContainerd } from '../e2e/support/context.js';
import { exitInfo, exitedInfo, sandboxReady } from '../e2e/support/observe.js';
import { PACKAGE_VERSION, PODCTL_NODE_FLAGS, REPO_ROOT, SEA_NODE_VERSION, createSeaHost, entries, removeSeaHost, runSea, seaSkipReason, warnIfSeaSkipped, whichNode, type SeaHost } from './support.js';
import { until } from '../support/wait.js';

warnIfSeaSkipped('test/sea/executable.test.ts');
const skip = seaSkipReason !== undefined;
const title = (name: string) => `${name}${skip ? ` (SKIPPED: ${seaSkipReason})` : ''}`;

/** Registers a host for the file's tests, and checks after each that only podctl's state dir was written. */
function useHost(stateDirName?: string): () => SeaHost {
  let host: SeaHost | undefined;
  beforeAll(() => {
    host = createSeaHost();
    expect(whichNode(host)).not.toBe(0);
  });
  afterEach(() => {
    if (!host) return;
    expect(entries(host.exeDir)).toEqual(['podctl']);
    expect(entries(host.cwd)).toEqual([]);
    expect(entries(host.home)).toEqual([]);
    // beside the host's own directories, at most the state dir the commands were given
    const allowed = ['cwd', 'home', 'opt', 'path-bin', ...(stateDirName ? [stateDirName] : [])];
    expect(entries(host.root).filter((e) => !allowed.includes(e))).toEqual([]);
  });
  afterAll(() => removeSeaHost(host));
  return () => {
    if (!host) throw new Error('sea host not ready');
    return host;
  };
}

describe.skipIf(skip)(title('the single executable without Node.js'), () => {
  const host = useHost();

  it("--version names podctl's version and the Node.js it carries", async () => {
    const run = await runSea(host(), ['--version']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toBe(`podctl/${PACKAGE_VERSION} linux-x64 node-${SEA_NODE_VERSION}`);
  });

  it('--help lists every command of the manifest', async () => {
    const run = await runSea(host(), ['--help']);
    expect(run.code).toBe(0);
    const manifest = JSON.parse(readFileSync(join(REPO_ROOT, 'oclif.manifest.json'), 'utf8')) as { commands: Record<string, { hidden?: boolean }> };
    // the commands the root help lists: every one not hidden (autocomplete's `script` is its shell
    // hook, hidden), sub-commands under their topic
    const ids = Object.entries(manifest.commands)
      .filter(([, c]) => c.hidden !== true)
      .map(([id]) => id);
    expect(ids).toContain('version');
    for (const id of ids.filter((x) => !x.includes(':'))) expect(run.stdout).toMatch(new RegExp(`^\\s+${id}\\s`, 'm'));
    // a command's own help comes from the embedded manifest and the command class
    const kill = await runSea(host(), ['kill', '--help']);
    expect(kill.code).toBe(0);
    expect(kill.stdout).toContain('--grace');
  });

  it('version --client --json: podctl, the carried Node.js, single executable', async () => {
    const run = await runSea(host(), ['version', '--client', '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ podctl: PACKAGE_VERSION, node: SEA_NODE_VERSION, nodeFlags: PODCTL_NODE_FLAGS, singleExecutable: true, runtime: null });
    // the flags of bin/run.js's first line, carried by the executable
    expect(PODCTL_NODE_FLAGS).toContain('--max-semi-space-size=4');
  });

  it('a bad flag is one line on stderr with the usage exit code', async () => {
    const run = await runSea(host(), ['status', '--no-such-flag']);
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/^error: .*--no-such-flag/);
  });

  it('ignores NODE_OPTIONS meant for a Node.js installed on the node', async () => {
    const run = await runSea(host(), ['version', '--client'], { env: { NODE_OPTIONS: '--require /nonexistent/hook.js' } });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(`node: ${SEA_NODE_VERSION} (${PODCTL_NODE_FLAGS.join(' ')})`);
  });

  it('starts from the code cache built into it (V8 accepts it)', async () => {
    const run = await runSea(host(), ['--version'], { env: { NODE_DEBUG: 'podctl-sea' } });
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/podctl\.cjs: code cache podctl\.v8 accepted/);
    expect(run.stderr).not.toMatch(/rejected/i);
  });

  it("compiles Node.js's own modules with the code cache Node.js carries (podctl's flags keep V8's flag hash)", async () => {
    // NODE_DEBUG_NATIVE=CODE_CACHE: Node.js says of each of its modules compiled at run time whether
    // V8 accepted its cache (a flag such as --expose-gc has every one rejected)
    const run = await runSea(host(), ['--version'], { env: { NODE_DEBUG_NATIVE: 'CODE_CACHE' } });
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/^Code cache of stream \(\w+\) is accepted$/m);
    expect(run.stderr).not.toMatch(/is rejected/);
  });
});

describeContainerd(import.meta.url, 'the single executable against containerd', () => {
  describe.skipIf(skip)(title('podctl-linux-x64 with no node on PATH'), () => {
    const node = useContainerd();
    const host = useHost('state');
    const stateDir = () => join(host().root, 'state');
    const podctl = (args: string[], timeoutMs = 60_000) => runSea(host(), [...args, '--runtime-endpoint', `unix://${node.socket}`, '--state-dir', stateDir()], { timeoutMs });

    it('version reports the runtime as CRI Version does', async () => {
      const expected = await node.cri.version();
      const run = await podctl(['version', '--json']);
      expect(run.code, run.stderr).toBe(0);
      expect(JSON.parse(run.stdout)).toEqual({
        podctl: PACKAGE_VERSION,
        node: SEA_NODE_VERSION,
        nodeFlags: PODCTL_NODE_FLAGS,
        singleExecutable: true,
        runtime: { endpoint: `unix://${node.socket}`, name: expected.runtimeName, version: expected.runtimeVersion, apiVersion: expected.runtimeApiVersion },
      });
      const text = await podctl(['version']);
      expect(text.stdout.trim().split('\n')).toEqual([
        `podctl: ${PACKAGE_VERSION} (single executable)`,
        `node: ${SEA_NODE_VERSION} (${PODCTL_NODE_FLAGS.join(' ')})`,
        `runtime: ${expected.runtimeName} ${expected.runtimeVersion} (CRI ${expected.runtimeApiVersion}, unix://${node.socket})`,
      ]);
    });

    it('status shows a runtime pod; kill --grace 1 terminates it (SIGKILL after the grace)', async () => {
      const real = await node.pods.create({ name: 'sea', containers: [{ name: 'stubborn', mode: 'ignore' }] });
      const status = await podctl(['status', '--uid', real.uid, '-o', 'json']);
      expect(status.code, status.stderr).toBe(0);
      const listed = JSON.parse(status.stdout) as { pods: { uid: string; namespace: string; name: string }[] };
      expect(listed.pods).toEqual([expect.objectContaining({ uid: real.uid, namespace: real.namespace, name: real.name })]);

      const kill = await podctl(['kill', `${real.namespace}/${real.name}`, '--grace', '1', '--json']);
      expect(kill.code, kill.stderr).toBe(0);
      const result = JSON.parse(kill.stdout) as { status: string; pods: { uid: string; outcome: string }[] };
      expect(result.status).toBe('done');
      expect(result.pods).toEqual([expect.objectContaining({ uid: real.uid, outcome: 'terminated' })]);
      expect(await exitInfo(node.cri, real.containers[0]!.id)).toMatchObject({ state: 'exited', exitCode: 137 });
      expect(await sandboxReady(node.cri, real.sandboxId)).toBe(false);
    });

    it('kill --no-wait hands the pod to a background podctl (the executable itself), which terminates it', async () => {
      const real = await node.pods.create({ name: 'sea-bg', containers: [{ name: 'stubborn', mode: 'ignore' }] });
      const kill = await podctl(['kill', `${real.namespace}/${real.name}`, '--grace', '2', '--no-wait', '--json']);
      expect(kill.code, kill.stderr).toBe(0);
      const result = JSON.parse(kill.stdout) as { handedOffTo: { pid: number; log: string; uids: string[] } | null };
      expect(result.handedOffTo?.uids).toEqual([real.uid]);
      const pid = result.handedOffTo!.pid;
      // the background driver is this executable, not a `node` (there is none on PATH)
      expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0]).toBe(host().exe);
      const exit = await exitedInfo(node.cri, real.containers[0]!.id, "the handed-off pod's container to exit");
      expect(exit.exitCode).toBe(137);
      await until('the background podctl to exit', () => readFileSafe(`/proc/${pid}/stat`) === undefined, { timeoutMs: 30_000, everyMs: 100 });
      const log = readFileSync(result.handedOffTo!.log, 'utf8');
      expect(log).toContain(real.uid);
      // no error in the driver's log: no error line, no error record with a value (`"error": null` is the JSON's "none")
      expect(log).not.toMatch(/^error:|"error":\s*(?!null)\S/im);
    });

    it('drain --dry-run shows the plan for the selected pods and changes nothing', async () => {
      const app = `sea-drain-${Date.now().toString(36)}`;
      const pods = await node.pods.createMany(2, { name: 'sea-drain', labels: { app } });
      const run = await podctl(['drain', '--dry-run', '-l', `app=${app}`, '--json']);
      expect(run.code, run.stderr).toBe(0);
      const plan = JSON.parse(run.stdout) as { dryRun: boolean; status: string; groups: { pods: { uid: string }[] }[] };
      expect(plan.dryRun).toBe(true);
      expect(plan.status).toBe('planned');
      expect(plan.groups.flatMap((g) => g.pods.map((p) => p.uid)).sort()).toEqual(pods.map((p) => p.uid).sort());
      for (const pod of pods) expect(await sandboxReady(node.cri, pod.sandboxId)).toBe(true);
    });
  });
});

function readFileSafe(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}
