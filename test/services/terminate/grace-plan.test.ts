import { describe, expect, it } from 'vitest';
import { graceInForce, plannedGraceSeconds } from '../../../src/services/terminate/grace-plan.js';
import type { PodInfo } from '../../../src/domain/session-api.js';

const pod = (spec: { grace?: number; deletion?: number }, state: PodInfo['state'] = 'sync', gracePeriod?: number): Pick<PodInfo, 'pod' | 'state' | 'gracePeriod'> => ({
  state,
  ...(gracePeriod !== undefined ? { gracePeriod } : {}),
  pod: {
    metadata: { name: 'p', ...(spec.deletion !== undefined ? { deletionGracePeriodSeconds: spec.deletion } : {}) },
    spec: { containers: [], ...(spec.grace !== undefined ? { terminationGracePeriodSeconds: spec.grace } : {}) },
  },
});

describe('planned grace (the engine rule read off a PodInfo)', () => {
  it('is the spec grace; deletion grace is bedrock; no grace at all is the kubelet minimum, 1 s', () => {
    expect(plannedGraceSeconds(pod({ grace: 45 }))).toBe(45);
    expect(plannedGraceSeconds(pod({ grace: 45, deletion: 7 }))).toBe(7);
    // the engine (calculateEffectiveGracePeriod) kills a pod whose spec names no grace with 1 s
    expect(plannedGraceSeconds(pod({}))).toBe(1);
  });

  it('an override only shortens, never below 1', () => {
    expect(plannedGraceSeconds(pod({ grace: 45 }), 5)).toBe(5);
    expect(plannedGraceSeconds(pod({ grace: 45 }), 90)).toBe(45);
    expect(plannedGraceSeconds(pod({ grace: 45 }), 0)).toBe(1);
  });

  it('a terminating pod keeps the grace in force, which only shrinks', () => {
    expect(graceInForce(pod({ grace: 45 }, 'terminating', 10))).toBe(10);
    expect(graceInForce(pod({ grace: 45 }, 'sync', 10))).toBe(0);
    expect(plannedGraceSeconds(pod({ grace: 45 }, 'terminating', 10))).toBe(10);
    expect(plannedGraceSeconds(pod({ grace: 45 }, 'terminating', 10), 20)).toBe(10);
    expect(plannedGraceSeconds(pod({ grace: 45 }, 'terminating', 10), 3)).toBe(3);
  });

  it('runtime-only pods (no spec) use grace 1, whatever the override', () => {
    expect(plannedGraceSeconds({ state: 'runtime' })).toBe(1);
    expect(plannedGraceSeconds({ state: 'runtime' }, 20)).toBe(1);
  });
});
