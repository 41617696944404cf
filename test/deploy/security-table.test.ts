/**
 * docs/cluster.md's table of what a stolen agent token can do, checked against the shipped RBAC:
 * each row's example request is sent to the local API server as podctl's agent (authorized by
 * exactly the (Cluster)Roles in deploy/), and the server refuses it (403, RBAC) exactly where the
 * table says "no (RBAC)"; a row the table says the node restriction denies is one RBAC lets through
 * (the policy's CEL is evaluated on such requests in manifests.test.ts).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKubeApiServer, type KubeApiServer } from '../support/kube-api-server.js';

interface Row {
  what: string;
  method: string;
  path: string;
  withPolicy: string;
  withoutPolicy: string;
}

/** The rows of the table under the security heading. */
function securityTable(): Row[] {
  const doc = readFileSync(path.join(process.cwd(), 'docs', 'cluster.md'), 'utf8');
  const section = doc.split(/^## /m).find((s) => s.startsWith('Security: what a stolen agent token can do'));
  if (section === undefined) throw new Error('docs/cluster.md has no section "Security: what a stolen agent token can do"');
  const lines = section.split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('| what '));
  return lines.map((line) => {
    const cells = line.split(' | ').map((c) => c.replace(/^\| |\s*\|$/g, '').trim());
    const example = /^`(GET|POST|PUT|PATCH|DELETE) (\/\S+)`$/.exec(cells[1] ?? '');
    if (!example) throw new Error(`docs/cluster.md: no example request in row '${line}'`);
    return { what: cells[0]!, method: example[1]!, path: example[2]!, withPolicy: cells[2]!, withoutPolicy: cells[3]! };
  });
}

describe("docs/cluster.md's stolen-token table against the shipped RBAC", () => {
  let server: KubeApiServer;
  let token: string;

  beforeAll(async () => {
    server = await startKubeApiServer();
    token = server.addAgent({ node: 'node-1' });
  });
  afterAll(async () => server?.stop());

  /** Whether RBAC refused the request, as the agent's token sent it. */
  async function refusedByRbac(method: string, pathname: string): Promise<boolean> {
    const body = method === 'GET' || method === 'DELETE' ? undefined : '{}';
    const contentType = method === 'PATCH' ? 'application/merge-patch+json' : 'application/json';
    const answer = await fetch(`http://127.0.0.1:${server.port}${pathname}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': contentType },
      ...(body ? { body } : {}),
      signal: AbortSignal.timeout(10_000),
    });
    await answer.arrayBuffer();
    const record = server.requests.findLast((r) => r.method === method && r.path === pathname);
    if (!record) throw new Error(`the server did not record ${method} ${pathname}`);
    return record.refusedByRbac === true;
  }

  it('every "no (RBAC)" is a 403 from RBAC; every other row passes RBAC (the policy, or nothing, is what stands)', async () => {
    const rows = securityTable();
    expect(rows.length).toBeGreaterThanOrEqual(15);
    for (const row of rows) {
      const refused = await refusedByRbac(row.method, row.path);
      const claim = `${row.what}: ${row.method} ${row.path}`;
      expect(row.withoutPolicy, claim).toMatch(/^(yes|no \(RBAC\))/);
      expect(refused, `${claim} (without the policy: ${row.withoutPolicy})`).toBe(row.withoutPolicy.startsWith('no'));
      // with the policy: RBAC's refusals stay; what the policy denies, RBAC grants
      if (/^no \(RBAC/.test(row.withPolicy)) expect(refused, claim).toBe(true);
      else expect(refused, `${claim} (with the policy: ${row.withPolicy})`).toBe(false);
    }
    // what the table says RBAC refuses, and the residue it says no policy closes, are both there
    expect(rows.filter((r) => r.withPolicy.startsWith('no (RBAC')).length).toBeGreaterThanOrEqual(6);
    expect(rows.find((r) => r.method === 'POST' && r.path.endsWith('/eviction'))?.withPolicy).toMatch(/^yes: the residue/);
  });
});
