/**
 * The screen's header: where podctl looks (node, runtime endpoint, state dir) and the working-pods
 * breakdown of the listing — lifecycle (sync / terminating / terminated) and config (desired / orphan /
 * runtime-only), the same classification as the podctl_working_pods metric — plus untracked runtime
 * pods. One line on a short terminal, two otherwise.
 */
import { Box, Text } from 'ink';
import type { WorkingPodCounts } from '../metrics/working-pods.js';
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
  const banner =
    props.runtimeDown !== undefined ? (
      <Text wrap="truncate" color={props.color ? 'red' : undefined} bold={props.color} inverse={props.color}>
        {truncate(`⚠ ${props.runtimeDown}`, width)}
      </Text>
    ) : null;
  if (props.compact) {
    const c = counts.byLifecycle;
    if (banner) return banner;
    return <Text wrap="truncate">{truncate(`podctl${props.kubelet ? ` · kubelet ${props.kubelet}` : ''} · sync ${c.sync} term ${c.terminating} done ${c.terminated} · ${view}`, width)}</Text>;
  }
  return (
    <Box flexDirection="column">
      <Text wrap="truncate">
        <Text bold>podctl watch</Text>
        {truncate(` · ${where} · ${view}`, Math.max(0, width - 12))}
      </Text>
      {banner ??
        (props.listError !== undefined ? (
          <Text wrap="truncate" color={props.color ? 'red' : undefined}>
            {truncate(`listing failed: ${props.listError}`, width)}
          </Text>
        ) : (
          <Text wrap="truncate" dimColor={props.color}>
            {truncate(`${countsLine(counts)}${props.kubelet ? ` │ kubelet ${props.kubelet}` : ''}`, width)}
          </Text>
        ))}
    </Box>
  );
}
