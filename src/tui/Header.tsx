/**
 * The screen's header: where podctl looks (node, runtime endpoint, state dir) and the working-pods
 * breakdown of the listing — lifecycle (sync / terminating / terminated) and config (desired / orphan /
 * runtime-only), the same classification as the podctl_working_pods metric — plus untracked runtime
 * pods. One line on a short terminal, two otherwise.
 */
import { Box } from 'ink';
import type { WorkingPodCounts } from '../metrics/working-pods.js';
import { StyledLine, styledLine } from './StyledLine.js';
import { truncate } from './view-model.js';

export interface HeaderProps {
  node?: string;
  /** Whether a kubelet runs beside podctl (`running`, `down`, `unknown`). */
  kubelet?: string;
  endpoint: string;
  simulated: boolean;
  counts: WorkingPodCounts;
  width: number;
  compact: boolean;
  sort: string;
  filter: string;
  shown: number;
  listError?: string;
  /** Which pods are shown, when not the whole node. */
  scope?: string;
  /** The banner while the runtime does not answer. */
  runtimeDown?: string;
  color: boolean;
}

function countsLine(c: WorkingPodCounts): string {
  const lifecycle = `sync ${c.byLifecycle.sync}  terminating ${c.byLifecycle.terminating}  terminated ${c.byLifecycle.terminated}`;
  const config = `desired ${c.byConfig.desired}  orphan ${c.byConfig.orphan}  runtime-only ${c.byConfig.runtime_only}`;
  return `${lifecycle} │ ${config} │ untracked ${c.untracked}`;
}

export function Header(props: HeaderProps) {
  const { counts, width } = props;
  const where = `node ${props.node ?? '(local)'} · ${props.endpoint}${props.simulated ? ' (simulated)' : ''}`;
  const view = `${props.scope ? `${props.scope} · ` : ''}${props.shown}/${counts.total} pods · sort ${props.sort}${props.filter ? ` · filter "${props.filter}"` : ''}`;
  const banner = props.runtimeDown !== undefined ? <StyledLine line={styledLine([{ text: truncate(`⚠ ${props.runtimeDown}`, width), color: 'red', bold: true }], props.color, true)} /> : null;
  if (props.compact) {
    const c = counts.byLifecycle;
    if (banner) return banner;
    return (
      <StyledLine
        line={styledLine([{ text: truncate(`podctl${props.kubelet ? ` · kubelet ${props.kubelet}` : ''} · sync ${c.sync} term ${c.terminating} done ${c.terminated} · ${view}`, width) }], props.color)}
      />
    );
  }
  return (
    <Box flexDirection="column">
      <StyledLine line={styledLine([{ text: 'podctl watch', bold: true }, { text: truncate(` · ${where} · ${view}`, Math.max(0, width - 12)) }], props.color)} />
      {banner ??
        (props.listError !== undefined ? (
          <StyledLine line={styledLine([{ text: truncate(`listing failed: ${props.listError}`, width), color: 'red' }], props.color)} />
        ) : (
          <StyledLine line={styledLine([{ text: truncate(`${countsLine(counts)}${props.kubelet ? ` │ kubelet ${props.kubelet}` : ''}`, width), dim: true }], props.color)} />
        ))}
    </Box>
  );
}
