/**
 * Start-up discipline: heavy modules are imported lazily, only where used. Checked statically over
 * the modules every command loads, and at run time by loading the built status command in a fresh
 * Node process and listing what it pulled in.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

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
    expect(new Set(urls.filter((u) => u.startsWith('file:'))).size).toBeLessThan(20);
  });
});
