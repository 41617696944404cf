import { describe, expect, it } from 'vitest';
import { effectiveGraceSeconds, killPodNowBoundMs, podGraceSeconds } from '../../src/lib/grace.js';
import type { PodInfo } from '../../src/services/session-api.js';

const pod = (spec: { grace?: number; deletion?: number }, state: PodInfo['state'] = 'sync', gracePeriod?: number): Pick<PodInfo, 'pod' | 'state' | 'gracePeriod'> => ({
  state,
  ...(gracePeriod !== undefined ? { gracePeriod } : {}),
  pod: {
    metadata: { name: 'p', ...(spec.deletion !== undefined ? { deletionGracePeriodSeconds: spec.deletion } : {}) },
    spec: { containers: [], ...(spec.grace !== undefined ? { terminationGracePeriodSeconds: spec.grace } : {}) },
  },
});

describe('grace arithmetic', () => {
  it('defaults to the spec, 30 s when unset; deletion grace is bedrock', () => {
    expect(podGraceSeconds(pod({}))).toBe(30);
    expect(podGraceSeconds(pod({ grace: 45 }))).toBe(45);
    expect(podGraceSeconds(pod({ grace: 45, deletion: 7 }))).toBe(7);
  });

  it('an override only shortens, never below 1', () => {
    expect(effectiveGraceSeconds(pod({ grace: 45 }), 5)).toBe(5);
    expect(effectiveGraceSeconds(pod({ grace: 45 }), 90)).toBe(45);
    expect(effectiveGraceSeconds(pod({ grace: 45 }), 0)).toBe(1);
  });

  it('a terminating pod keeps the grace in force, which only shrinks', () => {
    expect(effectiveGraceSeconds(pod({ grace: 45 }, 'terminating', 10))).toBe(10);
    expect(effectiveGraceSeconds(pod({ grace: 45 }, 'terminating', 10), 20)).toBe(10);
    expect(effectiveGraceSeconds(pod({ grace: 45 }, 'terminating', 10), 3)).toBe(3);
  });

  it('runtime-only pods (no spec) use grace 1', () => {
    expect(podGraceSeconds({ state: 'runtime' })).toBe(1);
  });

  it('killPodNow bound is max(10 s, 1.5 × grace)', () => {
    expect(killPodNowBoundMs(1)).toBe(10_000);
    expect(killPodNowBoundMs(6)).toBe(10_000);
    expect(killPodNowBoundMs(7)).toBe(10_500);
    expect(killPodNowBoundMs(30)).toBe(45_000);
  });
});
