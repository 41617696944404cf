/** Test support: a kubeconfig file pointing at a local fake API server (token auth, plain HTTP). */
import { writeFileSync } from 'node:fs';
import path from 'node:path';

export function writeKubeconfig(dir: string, port: number, name = 'test', token = 'abc'): string {
  const file = path.join(dir, 'kubeconfig');
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
