/** Test support: a kubeconfig file pointing at a local fake API server (token auth, plain HTTP). */
import { writeFileSync } from 'node:fs';
import path from 'node:path';

export function writeKubeconfig(dir: string, port: number, name = 'test', token = 'abc', fileName = 'kubeconfig'): string {
  const file = path.join(dir, fileName);
  writeFileSync(
    file,
    `apiVersion: v1
kind: Config
clusters: [{name: ${name}, cluster: {server: "http://127.0.0.1:${port}", insecure-skip-tls-verify: true}}]
users: [{name: ${name}, user: {token: ${token}}}]
contexts: [{name: ${name}, context: {cluster: ${name}, user: ${name}}}]
current-context: ${name}
`,
  );
  return file;
}

/**
 * A kubeconfig with which podctl speaks as the DaemonSet's agent on `node`: podctl's ServiceAccount,
 * authorized by exactly the RBAC shipped in deploy/ (the local API server answers 403 to the rest).
 */
export function writeAgentKubeconfig(dir: string, server: { port: number; addAgent(identity: { node: string }): string }, node = 'node-1'): string {
  return writeKubeconfig(dir, server.port, 'agent', server.addAgent({ node }), 'kubeconfig-agent');
}
