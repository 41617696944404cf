/**
 * deploy/optional/shutdown-guard: the DaemonSet with the shutdown guard is a valid DaemonSet; it
 * runs `podctl agent --shutdown-guard` with flags the agent knows, reaches the host's system bus
 * through a read-only mount of its directory at the path DBUS_SYSTEM_BUS_ADDRESS names, and asks
 * for no privilege beyond deploy/'s (uid 0, host PID, no capability). Where kubectl is installed,
 * `kubectl kustomize` of an operator's kustomization gives the same DaemonSet. The image run with
 * these settings on containerd is test/sea/shutdown-guard-pod.test.ts.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { DaemonSet } from 'kubernetes-models/apps/v1/DaemonSet';
import { parseDuration } from '../../src/lib/duration.js';
import { guardDaemonSet } from './shutdown-guard-component.js';

const ROOT = process.cwd();

describe('deploy/optional/shutdown-guard', () => {
  const ds = guardDaemonSet();
  const spec = ds.spec.template.spec;
  const agent = spec.containers[0];

  it('is a valid DaemonSet running the agent with the guard, with flags `podctl agent` knows', () => {
    expect(() => new DaemonSet(ds).validate()).not.toThrow();
    expect(agent.args).toContain('--shutdown-guard');
    const help = execFileSync(process.execPath, [path.join(ROOT, 'bin', 'run.js'), 'agent', '--help'], { encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } });
    for (const arg of agent.args.filter((a: string) => a.startsWith('--'))) expect(help).toContain(arg.split('=')[0]);
    // the fallback drain after SIGTERM ends inside the pod's grace
    const stop = agent.args.find((a: string) => a.startsWith('--shutdown-stop-timeout='));
    expect(parseDuration(stop.split('=')[1], 'shutdown-stop-timeout')).toBeLessThan(spec.terminationGracePeriodSeconds * 1000);
  });

  it("reaches the host's system bus read-only, at the address DBUS_SYSTEM_BUS_ADDRESS names, with no added privilege", () => {
    const address = agent.env.find((e: { name: string }) => e.name === 'DBUS_SYSTEM_BUS_ADDRESS')?.value as string;
    expect(address).toBe('unix:path=/run/dbus/system_bus_socket');
    const mount = agent.volumeMounts.find((m: { mountPath: string }) => address.slice('unix:path='.length).startsWith(`${m.mountPath}/`));
    expect(mount).toMatchObject({ mountPath: '/run/dbus', readOnly: true });
    expect(spec.volumes.find((v: { name: string }) => v.name === mount.name)).toMatchObject({ hostPath: { path: '/run/dbus', type: 'Directory' } });
    // logind trusts a root caller's uid; the lock is found by its host PID
    expect(spec.hostPID).toBe(true);
    expect(agent.securityContext).toMatchObject({ runAsUser: 0, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true });
    expect(agent.securityContext.privileged).toBeUndefined();
    expect(agent.securityContext.capabilities?.add).toBeUndefined();
    expect(spec.hostUsers).toBeUndefined();
  });

  const kubectl = spawnSync('kubectl', ['version', '--client'], { stdio: 'ignore' }).status === 0;
  it.skipIf(!kubectl)('kubectl kustomize of deploy/ with the component gives the same DaemonSet', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'podctl-kustomize-'));
    try {
      cpSync(path.join(ROOT, 'deploy'), path.join(dir, 'podctl'), { recursive: true });
      writeFileSync(
        path.join(dir, 'kustomization.yaml'),
        'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - podctl\ncomponents:\n  - podctl/optional/shutdown-guard\n',
      );
      const out = execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
      const built = parseAllDocuments(out)
        .map((d) => d.toJSON() as Record<string, any>)
        .find((o) => o?.kind === 'DaemonSet');
      expect(built!.spec.template.spec.containers[0]).toEqual(agent);
      expect(built!.spec.template.spec.volumes).toEqual(spec.volumes);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
