/**
 * The drain report as one self-contained HTML page: the summary first (wall time against the
 * group budgets, why the drain took as long as it did, the pods killed at their grace deadline,
 * the slowest pods, the failures), then one timeline lane per pod on a shared time axis, grouped
 * by priority group with the group's budget as a band behind its lanes.
 *
 * Invariants: the page holds no script and loads nothing (inline CSS and SVG only; its
 * Content-Security-Policy forbids any load); every text from a pod or a runtime is escaped; every
 * segment and mark carries a native SVG `<title>` with its exact times; past COMPACT_FROM pods the
 * lanes thin out to a few pixels without labels (the summary, first, stays the same). The DOM
 * names what tests and scripts look for: `g.lane[data-pod]` per pod, `g.group[data-group]` per
 * group, `.sigkill` per container SIGKILLed at its grace deadline.
 */
import type { DrainReport, ReportGroup, ReportPod, ReportSegment } from './model.js';

/** From this many pods on, lanes are thin and unlabelled. */
const COMPACT_FROM = 120;
const WIDTH = 1250;
const LABEL_W = 250;
const PLOT_X = 262;
const PLOT_W = 700;
const NOTE_X = PLOT_X + PLOT_W + 14;
const AXIS_H = 34;
const GROUP_H = 26;

const COLORS: Record<ReportSegment['kind'], string> = {
  prestop: '#8b5cf6',
  container: '#3b82f6',
  sidecar: '#14b8a6',
  'sandbox-stop': '#64748b',
  removal: '#a16207',
  'eviction-wait': '#f59e0b',
  'kubelet-wait': '#fcd34d',
};
const KILLED = '#dc2626';

function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);
}

/** "120 ms", "3.8 s", "2 min 05 s". */
function seconds(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
}

/** 00:38:16.726 (UTC). */
function clock(isoTime: string): string {
  return isoTime.slice(11, 23);
}

const ref = (pod: ReportPod): string => `${pod.namespace}/${pod.name}`;

function groupName(group: ReportGroup, index: number): string {
  return `Group ${index + 1} · priority ≥ ${group.priority}${group.critical ? ' (critical)' : ''}${group.budgetSeconds === null ? '' : ` · budget ${group.budgetSeconds} s`}`;
}

function segmentVerb(segment: ReportSegment): string {
  switch (segment.kind) {
    case 'prestop':
      return `preStop ${segment.label} ${segment.outcome === 'succeeded' ? '' : `${segment.outcome} `}${seconds(segment.durationMs)}`;
    case 'container':
    case 'sidecar': {
      const what = `${segment.kind === 'sidecar' ? 'sidecar' : 'container'} ${segment.label}`;
      if (segment.outcome === 'killed-at-deadline') return `${what} ignored SIGTERM and was SIGKILLed at its grace deadline, ${seconds(segment.durationMs)} after SIGTERM`;
      if (segment.outcome === 'killed') return `${what} was SIGKILLed at once (no grace left)`;
      return `${what} took ${seconds(segment.durationMs)} to exit on SIGTERM`;
    }
    case 'sandbox-stop':
      return `sandbox stop ${segment.outcome === 'failed' ? 'failed' : seconds(segment.durationMs)}`;
    case 'removal':
      return `removal ${seconds(segment.durationMs)}`;
    case 'eviction-wait':
      return `eviction refused by ${segment.label} for ${seconds(segment.durationMs)}`;
    case 'kubelet-wait':
      return `waited ${seconds(segment.durationMs)} for the kubelet`;
  }
}

/** What took a pod's time, in words: its stuck cause, else its kills, else its longest steps. */
function whereTimeWent(pod: ReportPod): string {
  if (pod.stuck !== null) return `did not finish: ${pod.stuck}`;
  const killed = pod.segments.filter((s) => s.outcome === 'killed-at-deadline');
  if (killed.length > 0) return killed.map(segmentVerb).join('; ');
  const main = pod.segments.filter((s) => s.kind !== 'sandbox-stop' && s.kind !== 'removal').sort((a, b) => b.durationMs - a.durationMs);
  const prestop = main.find((s) => s.kind === 'prestop');
  const stop = main.find((s) => s.kind === 'container' || s.kind === 'sidecar');
  const waits = main.filter((s) => s.kind === 'eviction-wait' || s.kind === 'kubelet-wait');
  const parts = [...waits, ...(prestop ? [prestop] : []), ...(stop ? [stop] : [])].map(segmentVerb);
  return parts.length > 0 ? parts.join(', then ') : 'no step recorded';
}

function summaryHtml(report: DrainReport, byUid: Map<string, ReportPod>): string {
  const s = report.summary;
  const killed = report.pods.filter((p) => p.killedAtDeadline.length > 0).sort((a, b) => (b.durationMs ?? 0) - (a.durationMs ?? 0));
  const failed = report.pods.filter((p) => p.failures.length > 0 || p.stuck !== null || p.outcome === 'failed');
  const budget = report.budgetSumSeconds === null ? '' : ` of the <b>${report.budgetSumSeconds} s</b> its groups were budgeted (the sum of the group budgets)`;
  const what = report.source === 'state-dir' ? `${s.pods} pod(s) picked from the state dir` : `The drain${report.source === 'agent' ? ' (by podctl agent)' : ''}`;
  const lead =
    report.source === 'state-dir'
      ? `<p class="lead">${esc(what)}, from the first request to the last end: <b>${seconds(report.wallMs)}</b>.</p>`
      : `<p class="lead">${what} took <b>${seconds(report.wallMs)}</b>${budget}. ${s.pods} pods: ${s.terminated} terminated, <span class="${s.killedAtDeadline > 0 ? 'bad' : ''}">${s.killedAtDeadline} killed at their grace deadline</span>, <span class="${s.failed > 0 ? 'bad' : ''}">${s.failed} with failures</span>, <span class="${s.notFinished > 0 ? 'bad' : ''}">${s.notFinished} not finished</span>${report.status ? ` (status: ${esc(report.status)})` : ''}.</p>`;
  const why = report.groups
    .map((g, index) => {
      const held = g.heldBy === null ? undefined : byUid.get(g.heldBy);
      const count = report.pods.filter((p) => p.group === index).length;
      const took = g.startedAt !== null && g.endedAt !== null ? seconds(Date.parse(g.endedAt) - Date.parse(g.startedAt)) : '–';
      const until = held ? ` — until <b>${esc(ref(held))}</b> ${held.terminatedAt === null ? 'gave up' : 'ended'}: ${esc(whereTimeWent(held))}` : '';
      return `<li><span class="g">${esc(groupName(g, index))}</span>, ${count} pod(s): <b>${took}</b>${until}.</li>`;
    })
    .join('');
  const killedRows = killed
    .slice(0, 20)
    .map((p) => {
      const segs = p.segments.filter((x) => x.outcome === 'killed-at-deadline');
      const span = segs.map((x) => `${clock(x.start)} → ${clock(x.end)} (${seconds(x.durationMs)})`).join(', ');
      return `<tr><td class="pod">${esc(ref(p))}</td><td>${esc(p.killedAtDeadline.join(', '))}</td><td>${p.gracePeriodSeconds ?? '–'} s</td><td>${span}</td></tr>`;
    })
    .join('');
  const more = (n: number, what: string): string => (n > 0 ? `<p class="more">… and ${n} more ${what}</p>` : '');
  const killedHtml =
    killed.length === 0
      ? '<p>None: every container exited on SIGTERM.</p>'
      : `<p>Their containers did not exit on SIGTERM; the runtime SIGKILLed them when the grace ran out (✕ in the timeline).</p><table><tr><th>pod</th><th>container</th><th>grace</th><th>SIGTERM → SIGKILL (UTC)</th></tr>${killedRows}</table>${more(killed.length - 20, 'killed at their deadline (✕ in the timeline)')}`;
  const slowRows = s.slowest
    .slice(0, 5)
    .map((uid) => byUid.get(uid))
    .filter((p): p is ReportPod => p !== undefined)
    .map((p) => `<tr><td class="pod">${esc(ref(p))}</td><td class="num">${p.durationMs === null ? '–' : seconds(p.durationMs)}</td><td>${esc(whereTimeWent(p))}</td></tr>`)
    .join('');
  const failedRows = failed
    .slice(0, 20)
    .map((p) => `<tr><td class="pod">${esc(ref(p))}</td><td>${esc(p.outcome)}</td><td>${esc([...(p.stuck !== null ? [`not finished: ${p.stuck}`] : []), ...p.failures].join(' · '))}</td></tr>`)
    .join('');
  const failedHtml =
    failed.length === 0 ? '<p>None.</p>' : `<table><tr><th>pod</th><th>outcome</th><th>what failed, or what holds it</th></tr>${failedRows}</table>${more(failed.length - 20, 'with failures')}`;
  return `${lead}
<section class="cols">
<div><h2>Why ${seconds(report.wallMs)}</h2><ol class="why">${why}</ol></div>
<div><h2>Killed at their grace deadline (${killed.length})</h2>${killedHtml}</div>
<div><h2>Slowest pods</h2><table><tr><th>pod</th><th>time</th><th>where the time went</th></tr>${slowRows}</table></div>
<div><h2>Failures (${failed.length})</h2>${failedHtml}</div>
</section>`;
}

/** Axis ticks: a round step giving about eight ticks over `spanMs`. */
function tickStep(spanMs: number): number {
  const steps = [100, 200, 250, 500, 1000, 2000, 5000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000, 1_800_000, 3_600_000];
  return steps.find((step) => spanMs / step <= 10) ?? 3_600_000;
}

interface Scale {
  x(isoTime: string): number;
  t0: number;
  spanMs: number;
}

function laneRows(pod: ReportPod): string[] {
  const names: string[] = [];
  for (const s of pod.segments) {
    if (s.kind !== 'container' && s.kind !== 'sidecar' && s.kind !== 'prestop') continue;
    const name = s.kind === 'prestop' ? s.label.replace(/ \(.*\)$/, '') : s.label;
    if (!names.includes(name)) names.push(name);
  }
  return names.slice(0, 4);
}

function segmentTitle(pod: ReportPod, s: ReportSegment): string {
  return `${ref(pod)} · ${s.detail}\n${clock(s.start)} → ${clock(s.end)} UTC (${seconds(s.durationMs)})`;
}

function laneSvg(pod: ReportPod, y: number, height: number, compact: boolean, scale: Scale, stripe: boolean): string {
  const out: string[] = [];
  const killed = pod.killedAtDeadline.length > 0;
  const bad = killed || pod.stuck !== null || pod.failures.length > 0;
  const title = [
    `${ref(pod)}${pod.priority === null ? '' : ` · priority ${pod.priority}`}${pod.gracePeriodSeconds === null ? '' : ` · grace ${pod.gracePeriodSeconds} s`}${pod.via === 'api' ? ' · stopped by the kubelet (API server)' : ''}`,
    pod.requestedAt ? `requested ${clock(pod.requestedAt)} UTC` : 'never requested',
    pod.terminatedAt ? `terminated ${clock(pod.terminatedAt)} UTC${pod.durationMs === null ? '' : ` (${seconds(pod.durationMs)})`}` : `not terminated (${pod.outcome})`,
    ...(killed ? [`killed at its grace deadline: ${pod.killedAtDeadline.join(', ')}`] : []),
    ...(pod.stuck !== null ? [`not finished: ${pod.stuck}`] : []),
    ...pod.failures.map((f) => `failed: ${f}`),
  ].join('\n');
  out.push(`<g class="lane${killed ? ' killed' : ''}${bad ? ' bad' : ''}" data-pod="${esc(ref(pod))}" data-uid="${esc(pod.uid)}" data-outcome="${esc(pod.outcome)}"><title>${esc(title)}</title>`);
  if (stripe) out.push(`<rect class="stripe" x="0" y="${y}" width="${WIDTH}" height="${height}"/>`);
  if (!compact) {
    const name = ref(pod);
    out.push(`<text class="name${bad ? ' bad' : ''}" x="${LABEL_W}" y="${y + Math.min(height, 18) / 2 + 4}" text-anchor="end">${esc(name.length > 40 ? `${name.slice(0, 39)}…` : name)}</text>`);
  }
  const rows = compact ? [] : laneRows(pod);
  const rowH = compact ? height - 1 : 7;
  const rowY = (segment: ReportSegment): number => {
    if (compact) return y;
    if (segment.kind === 'sandbox-stop' || segment.kind === 'removal' || segment.kind === 'eviction-wait' || segment.kind === 'kubelet-wait') return y + 3 + rows.length * 8;
    const name = segment.kind === 'prestop' ? segment.label.replace(/ \(.*\)$/, '') : segment.label;
    return y + 3 + Math.max(0, rows.indexOf(name)) * 8;
  };
  // the span from request to termination (or to the report's end), under the steps
  if (pod.requestedAt) {
    const x1 = scale.x(pod.requestedAt);
    const x2 = pod.terminatedAt ? scale.x(pod.terminatedAt) : PLOT_X + PLOT_W;
    const mid = compact ? y + height / 2 - 0.5 : y + height / 2;
    out.push(`<line class="span${pod.terminatedAt ? '' : ' open'}" x1="${x1.toFixed(1)}" x2="${Math.max(x1 + 1, x2).toFixed(1)}" y1="${mid}" y2="${mid}"/>`);
    if (!compact)
      out.push(
        `<rect class="requested" x="${(x1 - 1).toFixed(1)}" y="${y + 2}" width="2" height="${height - 4}"><title>${esc(`${ref(pod)} · termination requested ${clock(pod.requestedAt)} UTC`)}</title></rect>`,
      );
    if (pod.graceDeadline && Date.parse(pod.graceDeadline) <= scale.t0 + scale.spanMs && !compact) {
      const gx = scale.x(pod.graceDeadline);
      out.push(
        `<line class="deadline" x1="${gx.toFixed(1)}" x2="${gx.toFixed(1)}" y1="${y + 1}" y2="${y + height - 1}"><title>${esc(`${ref(pod)} · grace deadline ${clock(pod.graceDeadline)} UTC (grace ${pod.gracePeriodSeconds} s)`)}</title></line>`,
      );
    }
  }
  for (const s of pod.segments) {
    const x1 = scale.x(s.start);
    const w = Math.max(2, scale.x(s.end) - x1);
    const color = s.outcome === 'killed-at-deadline' || s.outcome === 'failed' ? KILLED : COLORS[s.kind];
    const sy = rowY(s);
    const h = compact ? rowH : s.kind === 'sandbox-stop' || s.kind === 'removal' ? 4 : rowH - 1;
    out.push(`<rect class="seg ${s.kind} ${esc(s.outcome)}" x="${x1.toFixed(1)}" y="${sy}" width="${w.toFixed(1)}" height="${h}" fill="${color}"><title>${esc(segmentTitle(pod, s))}</title></rect>`);
    if (s.outcome === 'killed-at-deadline') {
      const kx = scale.x(s.end);
      const cy = compact ? y + height / 2 : sy + h / 2;
      const r = compact ? Math.max(2, height / 2) : 4.5;
      out.push(
        `<g class="sigkill" data-container="${esc(s.label)}"><title>${esc(`${ref(pod)} · SIGKILL of ${s.label} at its grace deadline, ${clock(s.end)} UTC (${seconds(s.durationMs)} after SIGTERM)`)}</title><path d="M${(kx - r).toFixed(1)} ${(cy - r).toFixed(1)}L${(kx + r).toFixed(1)} ${(cy + r).toFixed(1)}M${(kx + r).toFixed(1)} ${(cy - r).toFixed(1)}L${(kx - r).toFixed(1)} ${(cy + r).toFixed(1)}"/></g>`,
      );
    }
  }
  // the note after the plot: the kill, the stuck cause, the failure, else the time it took
  if (!compact) {
    const note =
      pod.stuck !== null
        ? `stuck: ${pod.stuck}`
        : killed
          ? `✕ SIGKILL at deadline: ${pod.killedAtDeadline.join(', ')}`
          : pod.failures.length > 0
            ? `failed: ${pod.failures[0]}`
            : pod.durationMs === null
              ? pod.outcome
              : `${pod.outcome} in ${seconds(pod.durationMs)}`;
    out.push(`<text class="note${bad ? ' bad' : ''}" x="${NOTE_X}" y="${y + Math.min(height, 18) / 2 + 4}">${esc(note.length > 40 ? `${note.slice(0, 39)}…` : note)}</text>`);
  } else if (bad) {
    out.push(`<rect class="badmark" x="${NOTE_X}" y="${y}" width="8" height="${height - 1}"/>`);
  }
  out.push('</g>');
  return out.join('');
}

function timelineSvg(report: DrainReport): string {
  const compact = report.pods.length >= COMPACT_FROM;
  const t0 = Date.parse(report.startedAt);
  const spanMs = Math.max(1, Date.parse(report.endedAt) - t0);
  const scale: Scale = { t0, spanMs, x: (isoTime) => PLOT_X + (Math.min(Math.max(Date.parse(isoTime) - t0, 0), spanMs) / spanMs) * PLOT_W };
  const body: string[] = [];
  let y = AXIS_H;
  let stripe = false;
  report.groups.forEach((group, index) => {
    const pods = report.pods.filter((p) => p.group === index).sort((a, b) => (b.durationMs ?? Number.POSITIVE_INFINITY) - (a.durationMs ?? Number.POSITIVE_INFINITY) || ref(a).localeCompare(ref(b)));
    const heights = pods.map((p) => (compact ? 5 : Math.max(18, 6 + (laneRows(p).length + 1) * 8)));
    const groupH = GROUP_H + heights.reduce((a, b) => a + b, 0) + 6;
    const parts: string[] = [`<g class="group" data-group="${index + 1}" data-pods="${pods.length}">`];
    // the budget: a band from the group's start for its budget (past the axis: to its edge, with an arrow)
    if (group.startedAt !== null && group.budgetSeconds !== null) {
      const bx = scale.x(group.startedAt);
      const endMs = Date.parse(group.startedAt) + group.budgetSeconds * 1000;
      const past = endMs > t0 + spanMs;
      const bx2 = past ? PLOT_X + PLOT_W : scale.x(new Date(endMs).toISOString());
      parts.push(
        `<g class="budget"><title>${esc(`${groupName(group, index)}: from ${clock(group.startedAt)} to ${clock(new Date(endMs).toISOString())} UTC${past ? ' (past the end of this timeline)' : ''}`)}</title><rect x="${bx.toFixed(1)}" y="${y}" width="${Math.max(1, bx2 - bx).toFixed(1)}" height="${groupH - 4}"/>` +
          `<text x="${(bx2 - 4).toFixed(1)}" y="${y + 16}" text-anchor="end">budget ${group.budgetSeconds} s${past ? ` → ends at +${seconds(endMs - t0)}` : ''}</text></g>`,
      );
    }
    const took = group.startedAt !== null && group.endedAt !== null ? ` · took ${seconds(Date.parse(group.endedAt) - Date.parse(group.startedAt))}` : '';
    parts.push(`<text class="ghead" x="8" y="${y + 17}">${esc(`${groupName(group, index)} · ${pods.length} pod(s)${took}`)}</text>`);
    if (group.endedAt !== null && group.startedAt !== null) {
      const ex = scale.x(group.endedAt);
      parts.push(
        `<line class="gend" x1="${ex.toFixed(1)}" x2="${ex.toFixed(1)}" y1="${y + 2}" y2="${y + groupH - 6}"><title>${esc(`${groupName(group, index)} ended ${clock(group.endedAt)} UTC`)}</title></line>`,
      );
    }
    let ly = y + GROUP_H;
    pods.forEach((pod, i) => {
      parts.push(laneSvg(pod, ly, heights[i]!, compact, scale, stripe));
      stripe = !stripe;
      ly += heights[i]!;
    });
    parts.push('</g>');
    body.push(parts.join(''));
    y += groupH;
  });
  const height = y + 8;
  const step = tickStep(spanMs);
  const ticks: string[] = [];
  for (let t = 0; t <= spanMs + 1; t += step) {
    const x = PLOT_X + (t / spanMs) * PLOT_W;
    ticks.push(
      `<line class="tick" x1="${x.toFixed(1)}" x2="${x.toFixed(1)}" y1="${AXIS_H - 6}" y2="${height - 8}"/><text class="tickl" x="${x.toFixed(1)}" y="${AXIS_H - 10}" text-anchor="middle">+${seconds(t)}</text>`,
    );
  }
  const label = `Timeline of ${report.pods.length} pods on a shared time axis of ${seconds(spanMs)}, in ${report.groups.length} priority group(s)`;
  return `<svg class="timeline${compact ? ' compact' : ''}" xmlns="http://www.w3.org/2000/svg" role="img" aria-label="${esc(label)}" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}"><title>${esc(label)}</title>${ticks.join('')}<text class="tickl" x="${NOTE_X}" y="${AXIS_H - 10}">${compact ? 'red: killed or failed' : 'outcome'}</text>${body.join('')}</svg>`;
}

function legendHtml(): string {
  const item = (color: string, text: string, cls = 'sw'): string => `<span class="li"><span class="${cls}" style="background:${color}"></span>${esc(text)}</span>`;
  return `<p class="legend">${[
    item('#9ca3af', 'requested → terminated', 'sw line'),
    item(COLORS.prestop, 'preStop hook'),
    item(COLORS.container, 'container: SIGTERM → exit'),
    item(COLORS.sidecar, 'sidecar: SIGTERM → exit (after the main containers)'),
    item(KILLED, 'ignored SIGTERM: SIGKILL at the grace deadline (✕), or a failed step'),
    item(COLORS['sandbox-stop'], 'sandbox stop'),
    item(COLORS.removal, 'removal'),
    item(COLORS['eviction-wait'], 'eviction refused (429, PodDisruptionBudget)'),
    item(COLORS['kubelet-wait'], 'waiting for the kubelet'),
    item('rgba(37,99,235,.10)', 'group budget', 'sw band'),
  ].join('')}</p>`;
}

const STYLE = `
*{box-sizing:border-box}
body{margin:0;padding:24px 28px;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:#1f2937;background:#fff}
h1{font-size:20px;margin:0 0 4px}
h2{font-size:14px;margin:0 0 6px;text-transform:uppercase;letter-spacing:.04em;color:#4b5563}
.meta{color:#6b7280;margin:0 0 12px}
.lead{font-size:17px;margin:8px 0 16px;max-width:1150px}
.bad{color:#b91c1c;font-weight:600}
.cols{display:grid;grid-template-columns:repeat(2,minmax(0,1fr));gap:14px 28px;max-width:1250px;margin-bottom:18px}
.cols>div{border-top:2px solid #e5e7eb;padding-top:8px}
ol.why{margin:0;padding-left:20px}ol.why li{margin:0 0 6px}.g{color:#1d4ed8;font-weight:600}
table{border-collapse:collapse;font-size:13px;width:100%}
th{text-align:left;color:#6b7280;font-weight:600;border-bottom:1px solid #e5e7eb;padding:2px 8px 2px 0}
td{padding:2px 8px 2px 0;border-bottom:1px solid #f3f4f6;vertical-align:top}
td.pod{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;white-space:nowrap}td.num{text-align:right;white-space:nowrap}
.more{color:#6b7280;margin:4px 0 0}
.legend{font-size:12px;color:#374151;margin:6px 0 8px;max-width:1250px}
.li{display:inline-flex;align-items:center;margin:0 14px 4px 0}
.sw{display:inline-block;width:18px;height:9px;margin-right:5px;border-radius:2px}
.sw.line{height:2px}.sw.band{border:1px solid rgba(37,99,235,.35)}
svg.timeline{display:block;font:12px system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif;overflow:visible}
svg .tick{stroke:#e5e7eb;stroke-width:1}svg .tickl{fill:#6b7280;font-size:11px}
svg .stripe{fill:#f9fafb}
svg .budget rect{fill:rgba(37,99,235,.07);stroke:rgba(37,99,235,.30);stroke-dasharray:4 3}
svg .budget text{fill:#1d4ed8;font-size:11px}
svg .ghead{font-weight:700;fill:#111827;font-size:12.5px}
svg .gend{stroke:#1d4ed8;stroke-width:1.5}
svg .name{fill:#111827;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:11.5px}
svg .name.bad,svg .note.bad{fill:#b91c1c;font-weight:600}
svg .note{fill:#4b5563;font-size:11.5px}
svg .span{stroke:#9ca3af;stroke-width:2}svg .span.open{stroke:#dc2626;stroke-dasharray:3 2}
svg .requested{fill:#6b7280}
svg .deadline{stroke:#dc2626;stroke-width:1;stroke-dasharray:2 2}
svg .sigkill path{stroke:#dc2626;stroke-width:2.4;fill:none}
svg.compact .sigkill path{stroke-width:1.6}
svg .badmark{fill:#dc2626}
svg .seg{rx:1.5}
svg .lane:hover .stripe,svg .lane:hover{fill-opacity:.9}
`;

/**
 * What a simulated runtime's clock did: the simulator may run its timers faster than real time, so
 * a grace runs out sooner than its seconds say; a container killed at its deadline shows by how much.
 */
function simulatedClock(report: DrainReport): string {
  for (const pod of report.pods) {
    for (const s of pod.segments) {
      const timeout = s.outcome === 'killed-at-deadline' ? /timeout (\d+)s/.exec(s.detail) : null;
      const seconds = timeout ? Number(timeout[1]) : 0;
      if (seconds > 0 && s.durationMs > 0 && s.durationMs < seconds * 900) {
        return `runtime: podctl's simulator, its clock about ${Math.round((seconds * 1000) / s.durationMs)}× real time (${pod.namespace}/${pod.name}: a ${seconds} s stop timeout ran out after ${(s.durationMs / 1000).toFixed(1)} s)`;
      }
    }
  }
  return "runtime: podctl's simulator";
}

/** The whole page. */
export function renderReportHtml(report: DrainReport): string {
  const byUid = new Map(report.pods.map((p) => [p.uid, p]));
  const started = `${report.startedAt.slice(0, 10)} ${clock(report.startedAt)} UTC`;
  const title = report.source === 'state-dir' ? `Termination report: ${report.pods.length} pods` : `Drain report${report.node ? ` — node ${report.node}` : ''}`;
  const meta = [
    `started ${started}`,
    report.source === 'agent' ? 'drained by podctl agent (maintenance)' : report.source === 'drain' ? 'podctl drain' : 'pods from the state dir',
    ...(report.simulated ? [simulatedClock(report)] : []),
    'hover a lane or a segment for exact times',
  ].join(' · ');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title><style>${STYLE}</style></head>
<body>
<h1>${esc(title)}</h1>
<p class="meta">${esc(meta)}</p>
${summaryHtml(report, byUid)}
<h2>Timeline</h2>
${legendHtml()}
${timelineSvg(report)}
</body></html>
`;
}
