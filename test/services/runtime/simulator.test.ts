import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import net from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { serveSimulator, socketIsLive } from '../../../src/services/runtime/simulator.js';
import { holdAfterEachConnect } from '../../support/hold.js';

describe('simulator service', () => {
  it('serves on the socket until aborted, then removes it; a second server on a live socket is refused', async () => {
    const socketPath = path.join(mkdtempSync(path.join(tmpdir(), 'podctl-simsvc-')), 'nested', 'sim.sock');
    const controller = new AbortController();
    let ready: (info: { endpoint: string }) => void = () => undefined;
    const readyP = new Promise<{ endpoint: string }>((resolve) => (ready = resolve));
    const serving = serveSimulator({ socketPath, pods: 3, signal: controller.signal, onReady: (info) => ready(info) });
    const info = await readyP;
    expect(info.endpoint).toBe(`unix://${socketPath}`);
    expect(await socketIsLive(socketPath)).toBe(true);
    await expect(serveSimulator({ socketPath, pods: 1 })).rejects.toThrow(
      expect.objectContaining({ message: expect.stringMatching(/already served by another process/), hint: expect.stringMatching(/--socket/) }),
    );
    controller.abort();
    const result = await serving;
    expect(result).toMatchObject({ socketPath, pods: 3, endpoint: `unix://${socketPath}` });
    expect(existsSync(socketPath)).toBe(false);
    expect(await socketIsLive(socketPath)).toBe(false);
  });

  it('a live socket is live though this process was held past the bound right after connecting (its server is not replaced)', async () => {
    const socketPath = path.join(mkdtempSync(path.join(tmpdir(), 'podctl-simsvc-')), 'held.sock');
    const server = net.createServer((c) => c.destroy());
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    const held = holdAfterEachConnect(600);
    try {
      expect(await socketIsLive(socketPath, 100)).toBe(true);
      expect(held.connects()).toBe(1);
    } finally {
      held.restore();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('rejects a bad pod count before serving', async () => {
    await expect(serveSimulator({ socketPath: '/tmp/x.sock', pods: -1 })).rejects.toThrow(/--pods -1/);
  });
});
