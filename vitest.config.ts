import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'test/**/*.test.tsx'],
    // Ink renders only the last frame under CI=true; component tests read intermediate frames.
    // The machine running the tests has no kubelet: every podctl started gets the tests' kubelet
    // root (test/support/kubelet-root.ts), whose pods directory its volume check can read.
    env: { CI: 'false', FORCE_COLOR: '0', PODCTL_KUBELET_DIR: fileURLToPath(new URL('test/fixtures/kubelet-root', import.meta.url)) },
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: 'forks',
  },
});
