/**
 * Start-up discipline: heavy modules are imported lazily, only where used. Checked statically over
 * the modules every command loads, and at run time by loading the built status command in a fresh
 * Node process and listing what it pulled in.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator } from '../../src/cri/simulator/index.js';
import { startHealthz } from '../support/healthz.js';

const HEAVY = ['@kubernetes/client-node', 'ink', 'react', '@grpc/grpc-js', 'yaml', 'string-width', 'prom-client'];
const ROOT = process.cwd();

/** Value (non-type) static imports of a TypeScript source. */
function staticImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const found: string[] = [];
  for (const m of text.matchAll(/^import\s+(?!type\s)(?:[^'"]*?from\s+)?['"]([^'"]+)['"]/gm)) found.push(m[1] ?? '');
  for (const m of text.matchAll(/^export\s+(?!type\s)[^'"]*?from\s+['"]([^'"]+)['"]/gm)) found.push(m[1] ?? '');
  return found;
}

describe('lazy heavy imports', () => {
  const mine = [
    ...readdirSync(path.join(ROOT, 'src/lib')).map((f) => `src/lib/${f}`),
    ...readdirSync(path.join(ROOT, 'src/kube')).map((f) => `src/kube/${f}`),
    ...['kill', 'evict', 'drain', 'sync-known', 'status', 'simulator'].map((c) => `src/commands/${c}.ts`),
    ...['flags', 'safety-flags', 'last-resort', 'not-found', 'self', 'tier-up'].map((f) => `src/base/${f}.ts`),
    ...['terminate/terminate', 'terminate/kill', 'terminate/evict', 'drain/drain', 'drain/drain-plan', 'housekeeping/sync-known', 'diagnose/status', 'runtime/simulator'].map(
      (s) => `src/services/${s}.ts`,
    ),
  ].filter((f) => f.endsWith('.ts'));

  it.each(mine)('%s has no static import of a heavy module', (file) => {
    const heavy = staticImports(path.join(ROOT, file)).filter((spec) => HEAVY.some((h) => spec === h || spec.startsWith(`${h}/`)));
    expect(heavy).toEqual([]);
  });

  it('the static check sees a heavy import when there is one', () => {
    const probe = path.join(ROOT, 'test/lib/fixtures/heavy-import.ts.txt');
    expect(staticImports(probe)).toEqual(['@kubernetes/client-node', 'ink']);
  });

  it.skipIf(!existsSync(path.join(ROOT, 'dist/commands/status.js')))('loading the built status command pulls in neither client-node, Ink nor React', () => {
    const script = `
      const { register } = await import('node:module');
      const loaded = [];
      const { port1, port2 } = new MessageChannel();
      port1.on('message', (url) => loaded.push(url));
      port1.unref();
      register('data:text/javascript,' + encodeURIComponent(\`
        let port;
        export function initialize(data) { port = data.port; }
        export async function resolve(specifier, context, next) {
          const r = await next(specifier, context);
          port.postMessage(r.url);
          return r;
        }\`), { parentURL: import.meta.url, data: { port: port2 }, transferList: [port2] });
      await import(${JSON.stringify(path.join(ROOT, 'dist/commands/status.js'))});
      await new Promise((r) => setTimeout(r, 50));
      console.log(JSON.stringify(loaded));
    `;
    const urls = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' })) as string[];
    expect(urls.some((u) => u.includes('/dist/commands/status.js'))).toBe(true);
    for (const heavy of ['@kubernetes/client-node', '/ink/', '/react/']) {
      expect(urls.filter((u) => u.includes(`node_modules/${heavy.replace(/^\//, '')}`) || u.includes(`node_modules${heavy}`))).toEqual([]);
    }
    // The build bundles the commands (scripts/build.mjs): the command and the code it loads up front
    // (oclif included) are a few files of dist/, nothing is resolved from node_modules one by one.
    expect(urls.filter((u) => u.includes('/node_modules/'))).toEqual([]);
    // (a few small shared chunks too: Node's built-ins required on first use, the store's file calls)
    expect(new Set(urls.filter((u) => u.startsWith('file:'))).size).toBeLessThan(25);
  });

  // grpc-js reads its log settings from the environment when it loads: a process that reads them
  // loaded it, whether from node_modules or bundled into dist/.
  it.skipIf(!existsSync(path.join(ROOT, 'dist/commands/status.js')))('`podctl status` against a runtime does not load grpc-js (the CRI client speaks HTTP/2 itself)', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'podctl-lazy-grpc-'));
    const sim = await startSimulator({ socketPath: path.join(dir, 'cri.sock'), pods: 2 });
    try {
      const watchEnv = `
        const asked = [];
        const env = process.env;
        process.env = new Proxy(env, { get(target, key) { if (key === 'GRPC_NODE_VERBOSITY' || key === 'GRPC_VERBOSITY') asked.push(key); return Reflect.get(target, key); } });
        process.on('exit', () => process.stderr.write('grpc settings read: ' + asked.length + '\\n'));`;
      const args = [
        '--import',
        `data:text/javascript,${encodeURIComponent(watchEnv)}`,
        path.join(ROOT, 'bin/run.js'),
        'status',
        '--runtime-endpoint',
        sim.endpoint,
        '--state-dir',
        path.join(dir, 'state'),
      ];
      const run = await new Promise<{ stdout: string; stderr: string }>((resolve, reject) => {
        execFile(process.execPath, args, { cwd: ROOT, env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '', CONTAINER_RUNTIME_ENDPOINT: '' }, timeout: 60_000 }, (error, stdout, stderr) =>
          error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve({ stdout, stderr }),
        );
      });
      // it did talk to the runtime: the simulator's pods are listed
      expect(run.stdout).toContain(sim.state.listPodSandbox(undefined)[0]!.metadata!.name);
      expect(run.stderr).toContain('grpc settings read: 0');
    } finally {
      await sim.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// The CRI client speaks HTTP/2 itself over node:net (src/cri/client/h2/): node:http2 would bring tls,
// crypto and http with it at start-up. Node lists the built-ins a process compiled in moduleLoadList.
describe('the built status and kill paths load no node:http2', () => {
  const built = existsSync(path.join(ROOT, 'dist/commands/status.js')) && existsSync(path.join(ROOT, 'dist/commands/kill.js'));

  /** The built-ins (`NativeModule …`) a `podctl` run loaded, recorded at its exit. */
  async function builtinsOf(args: (endpoint: string, dir: string) => string[]): Promise<{ stdout: string; modules: string[] }> {
    const dir = mkdtempSync(path.join(tmpdir(), 'podctl-lazy-h2-'));
    const sim = await startSimulator({
      socketPath: path.join(dir, 'cri.sock'),
      timeScale: 0.05,
      pods: [{ name: 'web-1', namespace: 'web', terminationGracePeriodSeconds: 30, containers: [{ name: 'c', onSigterm: 'exit' }] }],
    });
    const [probe, record] = [path.join(dir, 'probe.cjs'), path.join(dir, 'record.json')];
    writeFileSync(probe, `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(record)}, JSON.stringify(process.moduleLoadList)));`);
    try {
      const run = await new Promise<{ stdout: string; stderr: string }>((resolve, reject) => {
        execFile(
          process.execPath,
          ['-r', probe, path.join(ROOT, 'bin/run.js'), ...args(sim.endpoint, dir)],
          { cwd: ROOT, env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '', CONTAINER_RUNTIME_ENDPOINT: '' }, timeout: 60_000 },
          (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve({ stdout, stderr })),
        );
      });
      const modules = (JSON.parse(readFileSync(record, 'utf8')) as string[]).filter((m) => m.startsWith('NativeModule '));
      return { stdout: run.stdout, modules };
    } finally {
      await sim.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it.skipIf(!built)('`podctl status` lists the runtime without loading http2 or tls', async () => {
    const { stdout, modules } = await builtinsOf((endpoint, dir) => ['status', '--runtime-endpoint', endpoint, '--state-dir', path.join(dir, 'state')]);
    expect(stdout).toContain('web-1');
    expect(modules).toContain('NativeModule net');
    expect(modules.filter((m) => /^NativeModule (http2|tls|internal\/http2\/.*)$/.test(m))).toEqual([]);
  });

  it.skipIf(!built)(
    '`podctl kill` stops a pod without loading http2 or tls',
    async () => {
      const healthz = await startHealthz(() => undefined);
      try {
        const { stdout, modules } = await builtinsOf((endpoint, dir) => [
          'kill',
          'web/web-1',
          '--force',
          '--grace',
          '1',
          '--json',
          '--runtime-endpoint',
          endpoint,
          '--state-dir',
          path.join(dir, 'state'),
          '--kubelet-healthz',
          healthz.url,
        ]);
        expect(JSON.parse(stdout)).toMatchObject({ pods: [expect.objectContaining({ name: 'web-1', outcome: 'terminated' })] });
        expect(modules.filter((m) => /^NativeModule (http2|tls|internal\/http2\/.*)$/.test(m))).toEqual([]);
      } finally {
        healthz.close();
      }
    },
    60_000,
  );
});

/**
 * Node's own modules a start-up may load beyond a bare `node -e 0` (each is compiled at first
 * require: ~2-8 ms apiece). Anything else on the paths below is a module loaded for code the
 * command does not run (perf_hooks, worker_threads, readline, timers/promises, fs/promises, http…).
 */
const MAY_LOAD: readonly (string | RegExp)[] = [
  // the runtime's socket, stdout and stderr: sockets and streams (net's own perf entries among them)
  'net',
  'tty',
  'stream',
  'stream/promises',
  'string_decoder',
  'internal/tty',
  'internal/stream_base_commons',
  'internal/abort_controller',
  /^internal\/streams\//,
  /^internal\/perf\/(observe|performance_entry)$/,
  'internal/fs/sync_write_stream',
  // process.finalization (Node's exit-time registry), which Node's own streams load at times: seen in
  // a CI run of --version only, not on an idle machine
  'internal/process/finalization',
  // the loader (src/boot.ts compiles the bundle with vm; Node's module loaders for dist/cli.js)
  'vm',
  /^internal\/vm(\/|$)/,
  /^internal\/modules\//,
  'diagnostics_channel',
  // files read with the callback API; the platform line of --version
  'internal/fs/read/context',
  'internal/fs/dir',
  'process',
  'os',
  'internal/process/report',
  // the CRI endpoint's resolution (src/cri/client/endpoint.ts) reads and stats through fs.promises:
  // its internals (not the public fs/promises module) and what they load
  'internal/fs/promises',
  'internal/fs/streams',
  /^internal\/fs\/(watchers|recursive_watch)$/,
  /^internal\/readline\/(interface|utils|callbacks)$/,
  'internal/repl/history',
  'internal/util/colors',
];

/**
 * Node's modules (NativeModule names) loaded by `args` run with node, listed at exit by the
 * `--require`d `dump`, and what it wrote to stderr before; stdin a pipe, or /dev/null (`stdinNull`:
 * a service's, cron's).
 */
function runListingModules(dump: string, args: string[], env: NodeJS.ProcessEnv = {}, { stdinNull = false } = {}): Promise<{ modules: string[]; stderr: string }> {
  const [file, argv] = stdinNull ? ['/bin/sh', ['-c', 'exec "$@" </dev/null', 'sh', process.execPath, '--require', dump, ...args]] : [process.execPath, ['--require', dump, ...args]];
  return new Promise((resolve, reject) => {
    execFile(file, argv, { cwd: ROOT, env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '', CONTAINER_RUNTIME_ENDPOINT: '', ...env }, timeout: 60_000 }, (error, _stdout, stderr) => {
      const line = /^NATIVE (.*)$/m.exec(stderr);
      if (!line) reject(new Error(`no module list (${error?.message ?? 'exit 0'}): ${stderr}`));
      else resolve({ modules: JSON.parse(line[1]!) as string[], stderr: stderr.slice(0, line.index) });
    });
  });
}

/** Node's modules (NativeModule names) loaded by `args` run with node (runListingModules). */
async function nativeModulesOf(dump: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<string[]> {
  return (await runListingModules(dump, args, env)).modules;
}

describe.skipIf(!existsSync(path.join(ROOT, 'dist/podctl.cjs')))("the built commands load only Node's modules their path uses", () => {
  let dir: string;
  let dump: string;
  let sim: Awaited<ReturnType<typeof startSimulator>>;
  let healthz: { url: string; close(): void };
  let bare: Set<string>;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'podctl-lazy-native-'));
    dump = path.join(dir, 'dump.cjs');
    writeFileSync(
      dump,
      "process.on('exit', () => process.stderr.write('\\nNATIVE ' + JSON.stringify(process.moduleLoadList.filter((m) => m.startsWith('NativeModule ')).map((m) => m.slice(13))) + '\\n'));",
    );
    sim = await startSimulator({ socketPath: path.join(dir, 'cri.sock'), pods: 3 });
    healthz = await startHealthz(() => {});
    bare = new Set(await nativeModulesOf(dump, ['-e', '0']));
  }, 60_000);
  afterAll(async () => {
    healthz?.close();
    await sim?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const unexpected = (loaded: string[]): string[] => loaded.filter((m) => !bare.has(m) && !MAY_LOAD.some((allowed) => (typeof allowed === 'string' ? allowed === m : allowed.test(m))));
  const common = (): string[] => ['--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state')];
  const env = (): NodeJS.ProcessEnv => ({ PODCTL_KUBELET_HEALTHZ: healthz.url, PODCTL_KUBELET_DIR: path.join(dir, 'kubelet') });

  it('`podctl --version`', async () => {
    expect(unexpected(await nativeModulesOf(dump, [path.join(ROOT, 'bin/run.js'), '--version']))).toEqual([]);
  });

  it('`podctl status` (the kubelet asked over a socket, not node:http)', async () => {
    const loaded = await nativeModulesOf(dump, [path.join(ROOT, 'bin/run.js'), 'status', ...common()], env());
    expect(loaded).toContain('net');
    expect(unexpected(loaded)).toEqual([]);
    // the bundle's CommonJS interop copies node:fs's exports without reading their values (its lazy
    // Dir and opendir); the ES-module CLI of `--version` still has Node's loader read them
    expect(loaded).not.toContain('internal/fs/dir');
  });

  // a reader writes no lease (no token to make) and resolves the endpoint with callback fs
  it('`podctl status` of a state dir with no checkpoints loads neither node:crypto nor fs.promises', async () => {
    const loaded = await nativeModulesOf(dump, [path.join(ROOT, 'bin/run.js'), 'status', '--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state-reader')], env());
    expect(loaded).toContain('net');
    expect(loaded.filter((m) => /^(crypto|internal\/crypto\/.*|internal\/fs\/promises|internal\/readline\/.*)$/.test(m))).toEqual([]);
  });

  // oclif's logger loads the `debug` package (supports-color, node:tty) only when DEBUG is set, its
  // colours and spinner on first use; stdin on /dev/null is answered without asking node:tty
  it('`podctl status` and `--version` with no terminal (stdin a pipe or /dev/null) load no node:tty', async () => {
    const status = [path.join(ROOT, 'bin/run.js'), 'status', ...common()];
    for (const stdinNull of [false, true]) {
      const run = await runListingModules(dump, status, env(), { stdinNull });
      expect(run.modules).toContain('net');
      expect(run.modules).not.toContain('tty');
      expect(run.stderr).not.toMatch(/oclif:/);
    }
    const version = await runListingModules(dump, [path.join(ROOT, 'bin/run.js'), '--version'], {}, { stdinNull: true });
    expect(version.modules).not.toContain('tty');
  });

  it("with DEBUG set, oclif's debug output is written as before", async () => {
    const status = await runListingModules(dump, [path.join(ROOT, 'bin/run.js'), 'status', ...common()], { ...env(), DEBUG: 'oclif:*' }, { stdinNull: true });
    expect(status.stderr).toMatch(/oclif:config loading core plugin from /);
    expect(status.stderr).toMatch(/oclif:main process\.argv: /);
    // the package's own node:tty check of stderr (its colours)
    expect(status.modules).toContain('tty');
    // a namespace DEBUG does not name stays quiet
    const other = await runListingModules(dump, [path.join(ROOT, 'bin/run.js'), '--version'], { DEBUG: 'something-else' }, { stdinNull: true });
    expect(other.stderr).not.toMatch(/oclif:/);
  });

  // its checkpoints' checksums are SHA-256 through WebAssembly (lib/sha256.ts), its temporary names
  // and lease token made without randomness from node:crypto
  it('`podctl kill` of one pod (its checkpoint written) loads no node:crypto', async () => {
    // the pods here are static or system-critical (--yes), and the kubelet's healthz answers, so
    // without --force kill refuses them, having written nothing
    const pod = sim.state.listPodSandbox(undefined)[0]!.metadata!;
    const loaded = await nativeModulesOf(dump, [path.join(ROOT, 'bin/run.js'), 'kill', `${pod.namespace}/${pod.name}`, '--grace', '0', '--force', '--yes', ...common()], env());
    expect(readdirSync(path.join(dir, 'state', 'pods'))).toContain(`${pod.uid}.ckpt`);
    expect(loaded.filter((m) => /^(crypto|internal\/crypto\/.*)$/.test(m))).toEqual([]);
    expect(unexpected(loaded)).toEqual([]);
  });
});
