/**
 * The local API server (kube-api-server.ts) for a file's tests, as the e2e files use it: started
 * before them, with a kubeconfig for it (writeKubeconfig's defaults) in a fresh `<tmp>/<prefix>…`
 * directory; stopped, and the directory removed, after them. The handle's fields are valid inside
 * tests; what a test adds to the server (pods, events) stays until the file's end unless it clears it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { writeKubeconfig } from '../kube/support.js';
import { startKubeApiServer, type KubeApiServer } from './kube-api-server.js';

export interface KubeApiContext {
  readonly api: KubeApiServer;
  readonly kubeconfig: string;
}

export function useKubeApiServer(prefix: string): KubeApiContext {
  let api: KubeApiServer | undefined;
  let dir: string | undefined;
  let kubeconfig: string | undefined;
  beforeAll(async () => {
    api = await startKubeApiServer();
    dir = mkdtempSync(join(tmpdir(), prefix));
    kubeconfig = writeKubeconfig(dir, api.port);
  });
  afterAll(async () => {
    await api?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  return {
    get api() {
      if (!api) throw new Error('the local API server is not started yet (use it inside a test)');
      return api;
    },
    get kubeconfig() {
      if (!kubeconfig) throw new Error('the local API server is not started yet (use it inside a test)');
      return kubeconfig;
    },
  };
}
