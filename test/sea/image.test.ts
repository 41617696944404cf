/**
 * The OCI image archive (dist/podctl-image.oci.tar, `npm run image`): its layout, digests and config
 * as the OCI image spec defines them, the single executable inside it byte for byte, fixed
 * timestamps, the size goals; and, on the containerd test node, that containerd imports it and runs
 * the executable from it on the image's minimal base.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeContainerd, requireSocket } from '../e2e/support/env.js';
import { PACKAGE_VERSION, PODCTL_NODE_FLAGS, REPO_ROOT, SEA_NODE_VERSION, SEA_PATH } from './support.js';

const ARCHIVE = join(REPO_ROOT, 'dist', 'podctl-image.oci.tar');
const skipReason = existsSync(ARCHIVE) ? undefined : `${ARCHIVE} is not built (run \`npm run image\`; \`npm test\` builds it)`;
if (skipReason && process.env.PODCTL_REQUIRE_SEA === '1') throw new Error(`image: PODCTL_REQUIRE_SEA=1 but ${skipReason}`);
if (skipReason) console.warn(`${'#'.repeat(78)}\n# IMAGE SKIPPED: test/sea/image.test.ts\n# ${skipReason}\n${'#'.repeat(78)}`);
const title = (name: string) => `${name}${skipReason ? ` (SKIPPED: ${skipReason})` : ''}`;

interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
}

const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

describe.skipIf(skipReason !== undefined)(title('the OCI image archive'), () => {
  let dir = '';
  const blob = (d: Descriptor): Buffer => {
    expect(d.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    const bytes = readFileSync(join(dir, 'blobs', 'sha256', d.digest.slice('sha256:'.length)));
    expect(sha256(bytes)).toBe(d.digest.slice('sha256:'.length));
    expect(bytes.length).toBe(d.size);
    return bytes;
  };
  let index: { schemaVersion: number; manifests: Descriptor[] };
  let manifest: { schemaVersion: number; mediaType: string; config: Descriptor; layers: Descriptor[] };

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'podctl-image-test-'));
    execFileSync('tar', ['-xf', ARCHIVE, '-C', dir]);
    index = JSON.parse(readFileSync(join(dir, 'index.json'), 'utf8')) as typeof index;
    expect(index.manifests).toHaveLength(1);
    manifest = JSON.parse(blob(index.manifests[0]!).toString('utf8')) as typeof manifest;
  });
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('is an OCI image layout: oci-layout, an index naming one manifest, digests and sizes that match', () => {
    expect(JSON.parse(readFileSync(join(dir, 'oci-layout'), 'utf8'))).toEqual({ imageLayoutVersion: '1.0.0' });
    expect(index.schemaVersion).toBe(2);
    expect(index.manifests[0]).toMatchObject({
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      annotations: { 'org.opencontainers.image.ref.name': PACKAGE_VERSION, 'io.containerd.image.name': `localhost/podctl:${PACKAGE_VERSION}` },
    });
    expect(manifest).toMatchObject({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json' });
    expect(manifest.config.mediaType).toBe('application/vnd.oci.image.config.v1+json');
    expect(manifest.layers.map((l) => l.mediaType)).toEqual(['application/vnd.oci.image.layer.v1.tar+gzip']);
    blob(manifest.config);
    blob(manifest.layers[0]!);
  });

  it("config: linux/amd64, entrypoint podctl with args agent, fixed creation time, the layer's diff_id", () => {
    const config = JSON.parse(blob(manifest.config).toString('utf8')) as {
      created: string;
      architecture: string;
      os: string;
      config: { Entrypoint: string[]; Cmd: string[]; Labels: Record<string, string> };
      rootfs: { type: string; diff_ids: string[] };
    };
    expect(config).toMatchObject({ architecture: 'amd64', os: 'linux', created: '1970-01-01T00:00:00Z' });
    expect(config.config.Entrypoint).toEqual(['/usr/local/bin/podctl']);
    expect(config.config.Cmd).toEqual(['agent']);
    expect(config.config.Labels['org.opencontainers.image.version']).toBe(PACKAGE_VERSION);
    const layer = gunzipSync(blob(manifest.layers[0]!));
    expect(config.rootfs).toEqual({ type: 'layers', diff_ids: [`sha256:${sha256(layer)}`] });
  });

  it('the layer carries the executable byte for byte, and its shared libraries; every entry at time 0, owned by root', () => {
    const layerFile = join(dir, 'blobs', 'sha256', manifest.layers[0]!.digest.slice('sha256:'.length));
    const listing = execFileSync('tar', ['--full-time', '--numeric-owner', '-tvzf', layerFile], { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 })
      .trim()
      .split('\n');
    for (const line of listing) expect(line).toMatch(/^\S+ 0\/0\s+\d+ 1970-01-01 00:00:00 /);
    const names = listing.map((l) => l.split(/\s+/).slice(5).join(' ').replace(/^\.\//, ''));
    expect(names).toContain('usr/local/bin/podctl');
    expect(names).toContain('lib64/ld-linux-x86-64.so.2');
    expect(names.some((n) => /libc\.so\.6$/.test(n))).toBe(true);
    // the shutdown guard's lock holder (docs/shutdown.md): systemd-inhibit, its library, and the child it runs
    expect(names).toEqual(expect.arrayContaining(['usr/bin/systemd-inhibit', 'usr/bin/cat']));
    expect(names.some((n) => /systemd\/libsystemd-shared-\d+\.so$/.test(n))).toBe(true);
    const inside = execFileSync('tar', ['-xzOf', layerFile, './usr/local/bin/podctl'], { maxBuffer: 512 * 1024 * 1024 });
    expect(sha256(inside)).toBe(sha256(readFileSync(SEA_PATH)));
  });

  it('meets the size goals: ≤ 160 MB uncompressed, ≤ 55 MB compressed', () => {
    const compressed = blob(manifest.layers[0]!);
    expect(compressed.length).toBeLessThanOrEqual(55_000_000);
    expect(gunzipSync(compressed).length).toBeLessThanOrEqual(160_000_000);
  });
});

describeContainerd(import.meta.url, 'the image in containerd', () => {
  describe.skipIf(skipReason !== undefined)(title('ctr import and run'), () => {
    // a namespace of its own: the test node's CRI images (k8s.io) are left alone
    const namespace = `podctl-image-test-${process.pid}`;
    const ctr = (...args: string[]) => spawnSync('ctr', ['--connect-timeout', '5s', '-a', requireSocket(), '-n', namespace, ...args], { encoding: 'utf8', timeout: 120_000 });

    afterAll(() => {
      ctr('images', 'rm', `localhost/podctl:${PACKAGE_VERSION}`);
      ctr('namespaces', 'rm', namespace);
    });

    it('imports the archive and runs the executable from it (no Node.js in the image but its own)', () => {
      const imported = ctr('images', 'import', ARCHIVE);
      expect(imported.status, imported.stderr).toBe(0);
      expect(ctr('images', 'ls', '-q').stdout.split('\n')).toContain(`localhost/podctl:${PACKAGE_VERSION}`);
      const run = ctr('run', '--rm', `localhost/podctl:${PACKAGE_VERSION}`, `podctl-image-${process.pid}`, '/usr/local/bin/podctl', 'version', '--client', '--json');
      expect(run.status, run.stderr).toBe(0);
      expect(JSON.parse(run.stdout)).toEqual({ podctl: PACKAGE_VERSION, node: SEA_NODE_VERSION, nodeFlags: PODCTL_NODE_FLAGS, singleExecutable: true, runtime: null });
    });
  });
});
