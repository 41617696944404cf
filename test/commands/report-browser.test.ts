/**
 * The drain report in a real browser: Debian's `chromium`, headless, driven over the DevTools
 * protocol (test/support/chromium.ts), opens the page `podctl drain --report` wrote for the demo
 * node's 36-pod drain and for a 500-pod simulated drain. The rendered DOM has one lane per pod, the
 * priority groups, and a SIGKILL mark exactly on the pods whose containers the runtime SIGKILLed
 * (they ignored SIGTERM); the page asks for nothing but itself, and loads within a bound.
 *
 * scripts/test.sh installs chromium as root; without it this file skips, loudly (CI sets
 * PODCTL_REQUIRE_CHROMIUM=1, which makes a missing browser a failure).
 * PODCTL_REPORT_SCREENSHOT=FILE also writes the demo report's screenshot there (docs/drain-report.png).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import { LABEL_POD_NAME, LABEL_POD_NAMESPACE } from '../../src/cri/client/kubelet-labels.js';
import type { DrainReport } from '../../src/services/drain/report/model.js';
import { Chromium, chromiumPath } from '../support/chromium.js';

const ROOT = process.cwd();
/** A generous bound for a page to load on a busy 2-core machine (ms); the page is static. */
const LOAD_BOUND_MS = 20_000;
const browserMissing = chromiumPath() === undefined && process.env.PODCTL_REQUIRE_CHROMIUM !== '1';
if (browserMissing) console.warn('[report-browser] NO CHROMIUM: the drain report browser tests are SKIPPED (scripts/test.sh installs it as root)');

function podctl(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [path.join(ROOT, 'bin', 'run.js'), ...args],
      { cwd: ROOT, env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '', CONTAINER_RUNTIME_ENDPOINT: '' }, timeout: 240_000, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

interface Rendered {
  lanes: { pod: string; killed: boolean; marks: number }[];
  groups: { group: string; lanes: number }[];
  summaryFirst: boolean;
  width: number;
}

const RENDERED = `(() => {
  const lanes = [...document.querySelectorAll('svg.timeline g.lane')].map((g) => ({ pod: g.getAttribute('data-pod'), killed: g.classList.contains('killed'), marks: g.querySelectorAll('.sigkill').length }));
  const groups = [...document.querySelectorAll('svg.timeline g.group')].map((g) => ({ group: g.getAttribute('data-group'), lanes: g.querySelectorAll('g.lane').length }));
  const lead = document.querySelector('p.lead'), svg = document.querySelector('svg.timeline');
  return { lanes, groups, summaryFirst: !!lead && !!svg && lead.getBoundingClientRect().top < svg.getBoundingClientRect().top, width: svg.getBoundingClientRect().width };
})()`;

/** Starts a simulator, drains it with --report, returns the page's path and the drain's report data. */
async function drainWithReport(name: string, pods: number, timeScale: number, drainArgs: string[]): Promise<{ page: string; report: DrainReport; sim: RunningSimulator }> {
  const dir = mkdtempSync(path.join(tmpdir(), `podctl-report-${name}-`));
  const sim = await startSimulator({ socketPath: path.join(dir, 'cri.sock'), pods, timeScale });
  const common = ['--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state')];
  const page = path.join(dir, 'report.html');
  const drain = await podctl(['drain', ...drainArgs, '--yes', '--report', page, '--json', ...common]);
  expect(drain.code, drain.stderr.slice(-2000)).toBe(0);
  const json = await podctl(['report', '-o', 'json', ...common]);
  expect(json.code, json.stderr).toBe(0);
  return { page, report: JSON.parse(json.stdout) as DrainReport, sim };
}

describe.skipIf(browserMissing)('the drain report in headless Chromium', { timeout: 300_000 }, () => {
  let browser: Chromium;
  const sims: RunningSimulator[] = [];

  beforeAll(async () => {
    if (!existsSync(path.join(ROOT, 'dist', 'commands', 'report.js'))) throw new Error('dist/ is missing or old: run `npm run build` first');
    browser = await Chromium.launch();
  });
  afterAll(async () => {
    await browser?.close();
    for (const sim of sims) await sim.close();
  });

  it("the demo node's 36-pod drain: a lane per pod, two groups, ✕ on exactly the pods SIGKILLed; nothing loaded", async () => {
    const { page, report, sim } = await drainWithReport('demo', 36, 0.1, ['--grace-period', '20', '--critical-grace-period', '5']);
    sims.push(sim);
    // the pods the runtime SIGKILLed, from the simulator's own journal
    const killed = new Set(
      sim.state
        .journal()
        .flatMap((r) => (r.kind === 'signal' && r.signal === 'SIGKILL' ? [sim.state.container(r.id)] : []))
        .map((c) => `${c?.labels[LABEL_POD_NAMESPACE]}/${c?.labels[LABEL_POD_NAME]}`),
    );
    expect(killed.size).toBeGreaterThan(0);
    const tab = await browser.newPage(1280, 900);
    const url = pathToFileURL(page).href;
    const loadMs = await tab.open(url);
    expect(loadMs).toBeLessThan(LOAD_BOUND_MS);
    expect(tab.requests).toEqual([url]);
    const dom = await tab.evaluate<Rendered>(RENDERED);
    expect(dom.lanes).toHaveLength(36);
    expect(new Set(dom.lanes.map((l) => l.pod)).size).toBe(36);
    expect(dom.groups).toEqual([
      { group: '1', lanes: report.pods.filter((p) => p.group === 0).length },
      { group: '2', lanes: report.pods.filter((p) => p.group === 1).length },
    ]);
    expect(new Set(dom.lanes.filter((l) => l.marks > 0).map((l) => l.pod))).toEqual(killed);
    expect(dom.lanes.filter((l) => l.killed).length).toBe(killed.size);
    expect(dom.summaryFirst).toBe(true);
    // a real picture: a PNG as wide as the page
    const png = await tab.screenshot();
    expect(png.subarray(1, 4).toString()).toBe('PNG');
    expect(png.readUInt32BE(16)).toBeGreaterThanOrEqual(1180);
    if (process.env.PODCTL_REPORT_SCREENSHOT) writeFileSync(process.env.PODCTL_REPORT_SCREENSHOT, png);
  });

  it('a 500-pod drain: 500 thin lanes, the summary first, its kills marked, within the bound', async () => {
    const { page, report, sim } = await drainWithReport('500', 500, 0.02, ['--grace-period', '20', '--critical-grace-period', '5']);
    sims.push(sim);
    expect(readFileSync(page, 'utf8')).toContain('svg class="timeline compact"');
    const tab = await browser.newPage(1280, 900);
    const url = pathToFileURL(page).href;
    const loadMs = await tab.open(url);
    expect(loadMs).toBeLessThan(LOAD_BOUND_MS);
    expect(tab.requests).toEqual([url]);
    const dom = await tab.evaluate<Rendered>(RENDERED);
    expect(dom.lanes).toHaveLength(500);
    expect(dom.groups.reduce((n, g) => n + g.lanes, 0)).toBe(500);
    expect(dom.summaryFirst).toBe(true);
    const killed = report.pods.filter((p) => p.killedAtDeadline.length > 0).map((p) => `${p.namespace}/${p.name}`);
    expect(killed.length).toBeGreaterThan(0);
    expect(
      dom.lanes
        .filter((l) => l.marks > 0)
        .map((l) => l.pod)
        .sort(),
    ).toEqual(killed.sort());
    // thin lanes: 500 of them in a page a reader can scroll (about 6 px a lane)
    const height = await tab.evaluate<number>("document.querySelector('svg.timeline').getBoundingClientRect().height");
    expect(height).toBeLessThan(500 * 8);
  });
});
