/**
 * `podctl version`: what an operator checks first on a node — podctl's version, the Node.js it runs
 * on (the one inside the single executable, or the node of an npm install) with the flags it was
 * started with, and the container runtime's name and version as CRI Version reports them.
 *
 * Invariants: one Version RPC, bounded by the request deadline (`timeoutMs`, else crictl's
 * `timeout`, else 10 s) and the caller's signal, after the connect bound (a socket that is not a CRI
 * runtime is one line naming it and `--runtime-endpoint`); the client is closed whatever happened;
 * the runtime is asked only when `client` is false.
 */
import { connectCri } from '../../cri/client/client.js';
import { connectTimeoutFor, notCriError, resolveEndpoint } from '../../cri/client/endpoint.js';

interface RuntimeVersion {
  /** The runtime's endpoint, `unix:///path`. */
  endpoint: string;
  /** e.g. "containerd". */
  name: string;
  /** e.g. "v2.1.4". */
  version: string;
  /** The CRI API version the runtime speaks, e.g. "v1". */
  apiVersion: string;
}

export interface VersionResult {
  podctl: string;
  /** process.version of the running Node.js. */
  node: string;
  /** The flags it was started with (process.execArgv): podctl's own, from bin/run.js's first line. */
  nodeFlags: string[];
  /** True when podctl runs as the single executable (dist/podctl-linux-x64). */
  singleExecutable: boolean;
  /** null with --client (the runtime was not asked). */
  runtime: RuntimeVersion | null;
}

export interface VersionOptions {
  podctlVersion: string;
  singleExecutable: boolean;
  /** Only podctl's own versions: no runtime call. */
  client: boolean;
  runtimeEndpoint?: string;
  stateDir: string;
  timeoutMs?: number;
  signal?: AbortSignal;
}

export async function podctlVersion(options: VersionOptions): Promise<VersionResult> {
  const result: VersionResult = { podctl: options.podctlVersion, node: process.version, nodeFlags: [...process.execArgv], singleExecutable: options.singleExecutable, runtime: null };
  if (options.client) return result;
  const resolved = await resolveEndpoint({
    ...(options.runtimeEndpoint ? { flag: options.runtimeEndpoint } : {}),
    ...(options.timeoutMs ? { requestTimeoutMs: options.timeoutMs } : {}),
    stateDir: options.stateDir,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const client = await connectCri({ endpoint: resolved.endpoint, timeoutMs: resolved.timeoutMs });
  try {
    const connectMs = connectTimeoutFor(resolved.timeoutMs);
    await client.waitForReady(connectMs, options.signal).catch((error: unknown) => {
      if (options.signal?.aborted) throw error;
      throw notCriError(resolved, connectMs, error);
    });
    const v = await client.version(options.signal ? { signal: options.signal } : {});
    result.runtime = { endpoint: resolved.endpoint, name: v.runtimeName, version: v.runtimeVersion, apiVersion: v.runtimeApiVersion };
    return result;
  } finally {
    client.close();
  }
}

/** The text output: one line each. */
export function versionLines(result: VersionResult): string[] {
  const lines = [`podctl: ${result.podctl}${result.singleExecutable ? ' (single executable)' : ''}`, `node: ${result.node}${result.nodeFlags.length > 0 ? ` (${result.nodeFlags.join(' ')})` : ''}`];
  if (result.runtime) lines.push(`runtime: ${result.runtime.name} ${result.runtime.version} (CRI ${result.runtime.apiVersion}, ${result.runtime.endpoint})`);
  return lines;
}
