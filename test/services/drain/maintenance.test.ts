/**
 * Maintenance through the Node's annotations, in order: whoever waits for `podctl.io/drain` to say
 * how a drain ended finds the Event that explains it already posted.
 */
import { describe, expect, it } from 'vitest';
import type { NodeSession } from '../../../src/domain/session-api.js';
import type { ApiNode } from '../../../src/services/api/api-node.js';
import { checkMaintenance } from '../../../src/services/drain/maintenance.js';

function recordingApi(annotations: Record<string, string>): { api: ApiNode; calls: string[] } {
  const calls: string[] = [];
  const kube = {
    getNode: async () => ({ annotations }),
    annotateNode: async (changes: Record<string, string | null>) => {
      calls.push(`annotate ${JSON.stringify(changes)}`);
    },
    postNodeEvent: async (type: string, reason: string, message: string) => {
      calls.push(`event ${type} ${reason}: ${message}`);
    },
    setUnschedulable: async (value: boolean) => {
      calls.push(`unschedulable ${value}`);
    },
  };
  return { api: { kube } as unknown as ApiNode, calls };
}

describe('checkMaintenance', () => {
  it('a drain that fails posts its Warning Event, naming the cause, before the annotation says failed', async () => {
    const { api, calls } = recordingApi({ 'podctl.io/drain': 'requested' });
    const session = {
      listPods: async () => {
        throw new Error('runtime not answering');
      },
    } as unknown as NodeSession;
    const outcome = await checkMaintenance({ session, api, kubelet: { state: 'running' } as never, node: 'node-1' });
    expect(outcome).toEqual({ action: 'failed', detail: 'runtime not answering' });
    expect(calls).toEqual([
      'annotate {"podctl.io/drain":"draining"}',
      expect.stringMatching(/^event Normal DrainStarted: /),
      'event Warning DrainFailed: podctl agent: runtime not answering; then annotate podctl.io/drain=requested again',
      'annotate {"podctl.io/drain":"failed"}',
    ]);
  });

  it('does nothing while the node asks for nothing', async () => {
    const { api, calls } = recordingApi({});
    expect(await checkMaintenance({ session: {} as NodeSession, api, kubelet: { state: 'running' } as never, node: 'node-1' })).toEqual({ action: 'none' });
    expect(calls).toEqual([]);
  });
});
