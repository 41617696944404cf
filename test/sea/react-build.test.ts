/**
 * The single executable carries React's and Ink's production builds (scripts/sea.mjs defines
 * NODE_ENV=production): the watch screen's development builds cost several times the CPU and keep a
 * user-timing mark per render. Checked on the scripts the executable embeds: React, the reconciler and
 * Ink are in the watch screen's asset (dist/sea/assets/tui.cjs), one copy, none of them in the main
 * script (podctl.cjs) that every command compiles.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, seaSkipReason, warnIfSeaSkipped } from './support.js';

warnIfSeaSkipped('test/sea/react-build.test.ts');

const BUNDLE = join(REPO_ROOT, 'dist', 'sea', 'assets', 'tui.cjs');
const MAIN = join(REPO_ROOT, 'dist', 'sea', 'assets', 'podctl.cjs');
/** Warnings only the development build of the reconciler has. */
const DEVELOPMENT_ONLY = ['while rendering a different component', 'Each child in a list should have a unique'];

describe.skipIf(seaSkipReason !== undefined)("the executable's React build", () => {
  it('is the production one', () => {
    expect(existsSync(BUNDLE)).toBe(true);
    const bundle = readFileSync(BUNDLE, 'utf8');
    const development = readFileSync(join(REPO_ROOT, 'node_modules', 'react-reconciler', 'cjs', 'react-reconciler.development.js'), 'utf8');
    for (const marker of DEVELOPMENT_ONLY) {
      // The marker does tell the builds apart…
      expect(development).toContain(marker);
      // …and the executable has none of the development build.
      expect(bundle).not.toContain(marker);
    }
    // The production reconciler is there (its errors point to the decoder page).
    expect(bundle).toContain('Minified React error');
  });

  it('is not in the main script (one copy: the asset, loaded by the watch screen only)', () => {
    const main = readFileSync(MAIN, 'utf8');
    expect(main.length).toBeGreaterThan(100_000);
    expect(main).not.toContain('Minified React error');
    // yoga's WebAssembly (base64 in its module) neither
    expect(main).not.toContain('instantiateWasm');
  });

  it("oclif's packages for paths podctl does not take are an asset too, not in the main script", () => {
    const main = readFileSync(MAIN, 'utf8');
    const extras = readFileSync(join(REPO_ROOT, 'dist', 'sea', 'assets', 'oclif-extras.cjs'), 'utf8');
    // semver's, cli-spinners', minimatch's own texts (tinyglobby's are minified away)
    for (const marker of ['Invalid comparator', 'simpleDotsScrolling', 'pattern is too long']) {
      expect(extras).toContain(marker);
      expect(main).not.toContain(marker);
    }
  });
});
