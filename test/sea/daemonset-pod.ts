/**
 * The agent's pod as deploy/daemonset.yaml declares it, in the CRI terms the kubelet would give
 * containerd: host PID and network, the container's security context (user, capabilities, seccomp
 * profile, read-only root, no privilege escalation) and its mounts (read-only, propagation), read
 * from the manifest itself, so the end-to-end tests run what ships and a change to the manifest is a
 * change to what they run.
 *
 * Invariants: a setting this translation does not know fails the test (never silently dropped); a
 * hostPath volume of type Directory must exist on the host (the kubelet refuses to start the pod
 * otherwise), DirectoryOrCreate is created; each hostPath and emptyDir volume stands on a host
 * directory the test names; the projected token is left out (the tests give a kubeconfig instead).
 *
 * Also the image the pod runs (dist/podctl-image.oci.tar, imported with ctr into a node's CRI
 * namespace) and `runAgentPod`, which starts the pod through CRI on a test node as the kubelet would.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { parse } from 'yaml';
import type { CriClient } from '../../src/cri/client/client.js';
import { NamespaceModeCode as NamespaceMode } from '../../src/cri/client/codes.js';
import { MountPropagation, SecurityProfile_ProfileType } from '../../src/cri/client/generated/runtime_v1.js';
import { PACKAGE_VERSION, REPO_ROOT } from './support.js';

type Obj = Record<string, any>;

/** The DaemonSet's pod template, as shipped. */
export function agentPodTemplate(): { spec: Obj; container: Obj } {
  const ds = parse(readFileSync(join(REPO_ROOT, 'deploy', 'daemonset.yaml'), 'utf8')) as Obj;
  const spec = ds.spec.template.spec as Obj;
  return { spec, container: spec.containers[0] as Obj };
}

const PROPAGATION: Record<string, MountPropagation> = {
  None: MountPropagation.PROPAGATION_PRIVATE,
  HostToContainer: MountPropagation.PROPAGATION_HOST_TO_CONTAINER,
  Bidirectional: MountPropagation.PROPAGATION_BIDIRECTIONAL,
};
const SECCOMP: Record<string, SecurityProfile_ProfileType> = {
  RuntimeDefault: SecurityProfile_ProfileType.RuntimeDefault,
  Unconfined: SecurityProfile_ProfileType.Unconfined,
};

/** The container's securityContext as the kubelet hands it to the runtime (LinuxContainerSecurityContext). */
function securityContext(sc: Obj, namespaceOptions: Obj): Obj {
  const known = new Set(['runAsUser', 'readOnlyRootFilesystem', 'allowPrivilegeEscalation', 'capabilities', 'seccompProfile', 'privileged']);
  for (const key of Object.keys(sc)) if (!known.has(key)) throw new Error(`daemonset.yaml: securityContext.${key} is not translated to CRI by the test`);
  const seccomp = sc.seccompProfile?.type as string | undefined;
  if (seccomp !== undefined && SECCOMP[seccomp] === undefined) throw new Error(`daemonset.yaml: seccompProfile ${seccomp} is not translated`);
  return {
    namespaceOptions,
    privileged: sc.privileged === true,
    ...(sc.runAsUser !== undefined ? { runAsUser: { value: sc.runAsUser } } : {}),
    readonlyRootfs: sc.readOnlyRootFilesystem === true,
    // the kubelet: no_new_privs unless privilege escalation is allowed (or the container privileged)
    noNewPrivs: sc.allowPrivilegeEscalation === false,
    capabilities: { addCapabilities: (sc.capabilities?.add ?? []) as string[], dropCapabilities: (sc.capabilities?.drop ?? []) as string[] },
    ...(seccomp !== undefined ? { seccomp: { profileType: SECCOMP[seccomp], localhostRef: '' } } : {}),
  };
}

/** The container's mounts: each hostPath or emptyDir volume on the host directory the test names for it. */
function mounts(spec: Obj, container: Obj, hostDirs: Record<string, string>): Obj[] {
  const out: Obj[] = [];
  for (const mount of container.volumeMounts as Obj[]) {
    const volume = (spec.volumes as Obj[]).find((v) => v.name === mount.name)!;
    if (volume.projected) continue;
    const hostPath = hostDirs[mount.name];
    if (hostPath === undefined) throw new Error(`the test names no host directory for volume ${mount.name}`);
    if (volume.hostPath?.type === 'DirectoryOrCreate') mkdirSync(hostPath, { recursive: true });
    else if (volume.hostPath && volume.hostPath.type !== 'Directory') throw new Error(`daemonset.yaml: hostPath type ${volume.hostPath.type} of ${mount.name} is not translated`);
    else if (volume.hostPath && !statSync(hostPath).isDirectory()) throw new Error(`hostPath type check failed: ${hostPath} is not a directory`);
    else if (!volume.hostPath && !volume.emptyDir) throw new Error(`daemonset.yaml: volume ${mount.name} is not translated`);
    const propagation = PROPAGATION[(mount.mountPropagation as string | undefined) ?? 'None'];
    if (propagation === undefined) throw new Error(`daemonset.yaml: mountPropagation ${mount.mountPropagation} is not translated`);
    out.push({ containerPath: mount.mountPath, hostPath, readonly: mount.readOnly === true, selinuxRelabel: false, propagation });
  }
  return out;
}

export interface AgentPodOptions {
  uid: string;
  image: string;
  logDirectory: string;
  /** The host directory each hostPath and emptyDir volume of the DaemonSet stands on, by volume name. */
  hostDirs: Record<string, string>;
  /** Values of the $(VAR)s in the DaemonSet's arguments (its env from the downward API). */
  env: Record<string, string>;
  /** Arguments after the DaemonSet's (the last of a repeated flag wins). */
  extraArgs: string[];
  /** Another template than deploy/daemonset.yaml's (the DaemonSet with a component of deploy/optional/). */
  template?: { spec: Obj; container: Obj };
}

/** The sandbox and container configs the kubelet would give containerd for the DaemonSet's pod. */
function agentPodConfigs(options: AgentPodOptions): { sandboxConfig: Obj; containerConfig: Obj } {
  const { spec, container } = options.template ?? agentPodTemplate();
  const node = NamespaceMode.NODE;
  const namespaceOptions = { network: spec.hostNetwork ? node : NamespaceMode.POD, pid: spec.hostPID ? node : NamespaceMode.POD, ipc: NamespaceMode.POD };
  const labels = { 'io.kubernetes.pod.name': 'podctl-agent', 'io.kubernetes.pod.namespace': 'podctl-system', 'io.kubernetes.pod.uid': options.uid };
  const sandboxConfig = {
    metadata: { name: 'podctl-agent', uid: options.uid, namespace: 'podctl-system', attempt: 0 },
    hostname: '',
    logDirectory: options.logDirectory,
    labels,
    annotations: { 'kubernetes.io/config.source': 'api' },
    linux: { cgroupParent: '', securityContext: { namespaceOptions } },
  };
  const args = (container.args as string[]).map((a) =>
    a.replace(/\$\((\w+)\)/g, (_m, name: string) => {
      if (options.env[name] === undefined) throw new Error(`the test gives no value for $(${name})`);
      return options.env[name];
    }),
  );
  const containerConfig = {
    metadata: { name: container.name as string, attempt: 0 },
    image: { image: options.image },
    args: [...args, ...options.extraArgs],
    // the container's env given as values (the downward API's are the $(VAR)s above)
    envs: ((container.env ?? []) as Obj[]).filter((e) => typeof e.value === 'string').map((e) => ({ key: e.name as string, value: e.value as string })),
    logPath: `${container.name as string}/0.log`,
    labels: { ...labels, 'io.kubernetes.container.name': container.name as string },
    annotations: { 'io.kubernetes.container.restartCount': '0', 'io.kubernetes.pod.terminationGracePeriod': String(spec.terminationGracePeriodSeconds) },
    mounts: mounts(spec, container, options.hostDirs),
    linux: { securityContext: securityContext(container.securityContext as Obj, namespaceOptions) },
  };
  return { sandboxConfig, containerConfig };
}

/**
 * A kubelet root on the host for the agent's pod: `<dir>/pods`, under a shared bind mount of `dir`
 * (containerd refuses HostToContainer propagation from a private mount, and the test machine's / may
 * be one). `release` unmounts it.
 */
export function sharedKubeletRoot(dir: string): { pods: string; release: () => void } {
  mkdirSync(join(dir, 'pods'), { recursive: true });
  const mount = (...args: string[]) => {
    const run = spawnSync('mount', args, { encoding: 'utf8', timeout: 10_000 });
    if (run.status !== 0) throw new Error(`mount ${args.join(' ')}: ${run.stderr}`);
  };
  mount('--bind', dir, dir);
  mount('--make-rshared', dir);
  return { pods: join(dir, 'pods'), release: () => void spawnSync('umount', ['-l', dir], { timeout: 10_000 }) };
}

/** The image archive `npm run image` builds, and the reference it is imported as. */
const IMAGE_ARCHIVE = join(REPO_ROOT, 'dist', 'podctl-image.oci.tar');
const IMAGE = `localhost/podctl:${PACKAGE_VERSION}`;
/** Why a test of the image cannot run here (the archive is not built), or undefined. */
export const noImage = existsSync(IMAGE_ARCHIVE) ? undefined : `${IMAGE_ARCHIVE} is not built (run \`npm run image\`; \`npm test\` builds it)`;

/** `ctr` on the node at `socket`, in the CRI's namespace (bounded: 5 s to connect, 120 s in all). */
function ctr(socket: string, ...args: string[]) {
  return spawnSync('ctr', ['--connect-timeout', '5s', '-a', socket, '-n', 'k8s.io', ...args], { encoding: 'utf8', timeout: 120_000 });
}

/** Imports the image archive into the node at `socket`; throws with ctr's error when it fails. */
export function importImage(socket: string): void {
  const imported = ctr(socket, 'images', 'import', IMAGE_ARCHIVE);
  if (imported.status !== 0) throw new Error(`ctr images import: ${imported.stderr}`);
}

/** Removes the image from the node at `socket` (best effort: a node going away takes it anyway). */
export function removeImage(socket: string): void {
  ctr(socket, 'images', 'rm', IMAGE);
}

/** Where the DaemonSet runs its pod: a test node's CRI client, directory and socket. */
export interface AgentPodNode {
  cri: CriClient;
  nodeDir: string;
  socket: string;
}

/**
 * Runs the image's `podctl agent` as a pod through CRI on `node`, as the kubelet would run the
 * DaemonSet's (deploy/daemonset.yaml's, or `template`): the node's CRI socket directory mounted, the
 * endpoint named when the socket is not containerd.sock, NODE_NAME node-1; each CRI call bounded by
 * 60 s. Returns the pod's sandbox and its container's log (empty until written).
 */
export async function runAgentPod(node: AgentPodNode, pod: Pick<AgentPodOptions, 'uid' | 'hostDirs' | 'extraArgs' | 'template'>): Promise<{ sandboxId: string; logFile: string; log: () => string }> {
  const logDirectory = join(node.nodeDir, 'logs', 'pods', `podctl-system_podctl-agent_${pod.uid}`);
  const endpoint = basename(node.socket) === 'containerd.sock' ? [] : ['--runtime-endpoint', `unix:///run/containerd/${basename(node.socket)}`];
  const { sandboxConfig, containerConfig } = agentPodConfigs({
    ...pod,
    image: IMAGE,
    logDirectory,
    hostDirs: { 'cri-socket': dirname(node.socket), ...pod.hostDirs },
    env: { NODE_NAME: 'node-1', NODE_IP: '127.0.0.1' },
    extraArgs: [...pod.extraArgs, ...endpoint],
  });
  const sandboxId = await node.cri.runPodSandbox(sandboxConfig, { timeoutMs: 60_000 });
  const id = await node.cri.createContainer(sandboxId, containerConfig, sandboxConfig, { timeoutMs: 60_000 });
  await node.cri.startContainer(id, { timeoutMs: 60_000 });
  const logFile = join(logDirectory, 'agent', '0.log');
  return { sandboxId, logFile, log: () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '') };
}
