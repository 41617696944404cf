/**
 * The terminal's size as React state, following the output stream's `resize` events. A fixed size
 * (tests, a non-TTY stream without columns) can be given instead; 80×24 when nothing is known.
 */
import { useEffect, useState } from 'react';
import { useStdout } from 'ink';

export interface TerminalSize {
  columns: number;
  rows: number;
}

function sizeOf(stream: NodeJS.WriteStream): TerminalSize {
  return { columns: stream.columns || 80, rows: stream.rows || 24 };
}

export function useTerminalSize(fixed?: TerminalSize): TerminalSize {
  const { stdout } = useStdout();
  const [size, setSize] = useState<TerminalSize>(() => fixed ?? sizeOf(stdout));
  useEffect(() => {
    if (fixed !== undefined) {
      setSize(fixed);
      return undefined;
    }
    const onResize = () => setSize(sizeOf(stdout));
    onResize();
    stdout.on('resize', onResize);
    return () => {
      stdout.off('resize', onResize);
    };
  }, [stdout, fixed?.columns, fixed?.rows]);
  return size;
}
