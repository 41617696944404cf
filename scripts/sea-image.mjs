/**
 * Builds dist/podctl-image.oci.tar: an OCI image archive (an OCI image layout in a tar file) that
 * carries the single executable (`npm run image`, after `npm run sea`), written directly — no
 * registry, no daemon, no image tool.
 *
 * The image: one layer on an empty base holding /usr/local/bin/podctl (dist/podctl-linux-x64) and the
 * shared libraries its Node.js links against (glibc, libstdc++, libgcc_s, libatomic, taken from this
 * machine, as `ldd` lists them), /etc/passwd and /etc/group with root only, /tmp and
 * /var/lib/podctl. Entrypoint `podctl`, arguments `agent`.
 *
 * For `podctl agent --shutdown-guard` in the DaemonSet (docs/shutdown.md) it also carries what holds
 * logind's delay lock for the guard: this machine's `systemd-inhibit` (Debian package systemd) and
 * `cat` (coreutils), at their paths, with the libraries they load (libsystemd-shared among them).
 * Node.js cannot receive the lock's file descriptor; `systemd-inhibit` holds it for its child.
 *
 * Invariants:
 * - Reproducible: every timestamp is 0 (1970-01-01), owners are 0:0, entries sorted by name, gzip
 *   without a name or time; the same executable and libraries give the same archive bytes.
 * - Size goals (checked here, and by test/sea/image.test.ts): ≤ 160 MB uncompressed, ≤ 55 MB
 *   compressed; the build fails when the image is over.
 * - The archive's path is printed last.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';

const root = path.resolve(import.meta.dirname, '..');
const IMAGE_ARCHIVE = 'dist/podctl-image.oci.tar';
const MAX_UNCOMPRESSED = 160_000_000;
const MAX_COMPRESSED = 55_000_000;
const fail = (message) => {
  console.error(`[image] error: ${message}`);
  process.exit(1);
};

const executable = path.join(root, 'dist', 'podctl-linux-x64');
if (!existsSync(executable)) fail('dist/podctl-linux-x64 is missing: run `npm run sea` first');
/** The lock holder of the shutdown guard (src/services/shutdown/inhibit.ts runs `systemd-inhibit … cat`). */
const LOCK_HOLDER = ['/usr/bin/systemd-inhibit', '/usr/bin/cat'];
for (const program of LOCK_HOLDER) {
  if (!existsSync(program)) fail(`${program} is missing: the shutdown guard's lock holder comes from this machine (Debian: apt-get install systemd coreutils)`);
}
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));

/** The shared libraries (and the program interpreter) the executable loads, as `ldd` resolves them. */
function sharedLibraries(file) {
  const out = execFileSync('ldd', [file], { encoding: 'utf8' });
  const libs = [];
  for (const line of out.split('\n')) {
    const linked = /^\s*\S+ => (\/\S+) \(/.exec(line);
    const direct = /^\s*(\/\S+) \(/.exec(line);
    const found = linked?.[1] ?? direct?.[1];
    if (found) libs.push(found);
  }
  if (!libs.some((l) => l.includes('ld-linux'))) fail(`ldd ${file}: no program interpreter found`);
  return libs.sort();
}

const work = mkdtempSync(path.join(tmpdir(), 'podctl-image-'));
try {
  // 1. the root filesystem
  const rootfs = path.join(work, 'rootfs');
  const put = (source, target, mode) => {
    const dest = path.join(rootfs, target);
    mkdirSync(path.dirname(dest), { recursive: true });
    copyFileSync(realpathSync(source), dest);
    chmodSync(dest, mode);
  };
  put(executable, 'usr/local/bin/podctl', 0o755);
  // each library at the path the executable asks for, as a regular file (no symlinks in the layer)
  for (const lib of sharedLibraries(executable)) put(lib, lib.replace(/^\//, ''), 0o755);
  for (const program of LOCK_HOLDER) {
    put(program, program.replace(/^\//, ''), 0o755);
    for (const lib of sharedLibraries(program)) put(lib, lib.replace(/^\//, ''), 0o755);
  }
  for (const dir of ['tmp', 'var/lib/podctl']) mkdirSync(path.join(rootfs, dir), { recursive: true });
  chmodSync(path.join(rootfs, 'tmp'), 0o1777);
  chmodSync(path.join(rootfs, 'var/lib/podctl'), 0o700);
  // the one user, for what asks who it runs as (os.userInfo(), HOME)
  mkdirSync(path.join(rootfs, 'etc'));
  writeFileSync(path.join(rootfs, 'etc/passwd'), 'root:x:0:0:root:/root:/sbin/nologin\n');
  writeFileSync(path.join(rootfs, 'etc/group'), 'root:x:0:\n');
  for (const f of ['etc/passwd', 'etc/group']) chmodSync(path.join(rootfs, f), 0o644);

  // 2. the layer: a reproducible tar (GNU tar), then gzip without name or time
  const layerTar = path.join(work, 'layer.tar');
  execFileSync('tar', ['--create', '--file', layerTar, '--directory', rootfs, '--sort=name', '--mtime=@0', '--owner=0', '--group=0', '--numeric-owner', '--format=gnu', '.']);
  const tarBytes = readFileSync(layerTar);
  const gzBytes = gzipSync(tarBytes, { level: 9 });
  if (tarBytes.length > MAX_UNCOMPRESSED) fail(`the layer is ${tarBytes.length} bytes uncompressed, over ${MAX_UNCOMPRESSED}`);
  if (gzBytes.length > MAX_COMPRESSED) fail(`the layer is ${gzBytes.length} bytes compressed, over ${MAX_COMPRESSED}`);
  const sha = (b) => createHash('sha256').update(b).digest('hex');

  // 3. the OCI layout: config, manifest, index
  const layout = path.join(work, 'layout');
  const blobs = path.join(layout, 'blobs', 'sha256');
  mkdirSync(blobs, { recursive: true });
  const blob = (bytes) => {
    const digest = sha(bytes);
    writeFileSync(path.join(blobs, digest), bytes);
    return { digest: `sha256:${digest}`, size: bytes.length };
  };
  const layer = blob(gzBytes);
  const created = '1970-01-01T00:00:00Z';
  const config = {
    created,
    architecture: 'amd64',
    os: 'linux',
    config: {
      Entrypoint: ['/usr/local/bin/podctl'],
      Cmd: ['agent'],
      Env: ['PATH=/usr/local/bin:/usr/bin:/bin', 'PODCTL_STATE_DIR=/var/lib/podctl'],
      WorkingDir: '/',
      Labels: {
        'org.opencontainers.image.title': 'podctl',
        'org.opencontainers.image.version': pkg.version,
        'org.opencontainers.image.description': pkg.description,
        'org.opencontainers.image.licenses': pkg.license,
      },
    },
    rootfs: { type: 'layers', diff_ids: [`sha256:${sha(tarBytes)}`] },
    history: [{ created, created_by: 'scripts/sea-image.mjs: dist/podctl-linux-x64, systemd-inhibit and cat, and their shared libraries' }],
  };
  const configBlob = blob(Buffer.from(JSON.stringify(config)));
  const manifest = {
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.manifest.v1+json',
    config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...configBlob },
    layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', ...layer }],
  };
  const manifestBlob = blob(Buffer.from(JSON.stringify(manifest)));
  const reference = `localhost/podctl:${pkg.version}`;
  const index = {
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.index.v1+json',
    manifests: [
      {
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        ...manifestBlob,
        platform: { architecture: 'amd64', os: 'linux' },
        annotations: { 'org.opencontainers.image.ref.name': pkg.version, 'io.containerd.image.name': reference },
      },
    ],
  };
  writeFileSync(path.join(layout, 'index.json'), JSON.stringify(index));
  writeFileSync(path.join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));

  // 4. the archive
  const archive = path.join(root, IMAGE_ARCHIVE);
  rmSync(archive, { force: true });
  execFileSync('tar', [
    '--create',
    '--file',
    archive,
    '--directory',
    layout,
    '--sort=name',
    '--mtime=@0',
    '--owner=0',
    '--group=0',
    '--numeric-owner',
    '--format=gnu',
    'oci-layout',
    'index.json',
    'blobs',
  ]);
  const mb = (n) => `${(n / 1e6).toFixed(1)} MB`;
  console.error(
    `[image] ${reference}: layer ${mb(tarBytes.length)} uncompressed (≤ ${mb(MAX_UNCOMPRESSED)}), ${mb(gzBytes.length)} compressed (≤ ${mb(MAX_COMPRESSED)}); manifest ${manifestBlob.digest}`,
  );
  console.error(`[image] archive sha256 ${sha(readFileSync(archive))}, ${mb(statSync(archive).size)}`);
  console.log(IMAGE_ARCHIVE);
} finally {
  rmSync(work, { recursive: true, force: true });
}
