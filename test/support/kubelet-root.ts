/**
 * The kubelet root the tests give podctl (the machine running them has no kubelet): its pods
 * directory exists and holds no pod, so the volume check before a final delete reads it and finds
 * nothing mounted. vitest.config.ts gives the same directory to every podctl the tests start
 * (PODCTL_KUBELET_DIR); a test of the check itself names a root of its own.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const TEST_KUBELET_ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'kubelet-root');
