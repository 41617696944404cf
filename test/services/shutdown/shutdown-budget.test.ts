/**
 * The shutdown guard's budget (services/shutdown/budget.ts): the groups fitted into what logind
 * grants never lengthen, keep their order and fit; a short delay is named with the drop-in.
 */
import { describe, expect, it } from 'vitest';
import { checkBudget, fitGroups, groupsTotalSeconds } from '../../../src/services/shutdown/budget.js';
import { socketOfAddress } from '../../../src/services/shutdown/dbus.js';

const groups = [
  { priority: 0, budgetSeconds: 20 },
  { priority: 2_000_000_000, budgetSeconds: 10 },
];

describe('shutdown budget', () => {
  it('leaves groups that fit as they are', () => {
    expect(fitGroups(groups, 45)).toEqual(groups);
  });

  it.each([29, 13, 4, 1, 0])('fits 30 s of groups into %i s: in order, never longer, the leftover seconds to the critical group first', (window) => {
    const fitted = fitGroups(groups, window);
    expect(fitted.map((g) => g.priority)).toEqual([0, 2_000_000_000]);
    expect(groupsTotalSeconds(fitted)).toBe(window);
    fitted.forEach((g, i) => expect(g.budgetSeconds).toBeLessThanOrEqual(groups[i]!.budgetSeconds));
    if (window === 4) expect(fitted.map((g) => g.budgetSeconds)).toEqual([2, 2]);
  });

  it('a 5 s delay against 30 s of groups is short, says so with the drop-in, and leaves 3 s', () => {
    const check = checkBudget(groups, 5_000);
    expect(check).toMatchObject({ short: true, usableSeconds: 3, groupsTotalSeconds: 30 });
    expect(check.warning).toMatch(/InhibitDelayMaxSec=31.*\/etc\/systemd\/logind\.conf\.d\/99-podctl-shutdown\.conf/);
    expect(checkBudget(groups, 31_000)).toMatchObject({ short: false, usableSeconds: 30 });
    expect(checkBudget(groups, 31_000).warning).toBeUndefined();
  });

  it('reads the bus address as libdbus and sd-bus do', () => {
    expect(socketOfAddress('unix:path=/run/dbus/system_bus_socket')).toBe('/run/dbus/system_bus_socket');
    expect(socketOfAddress('unix:path=/tmp/a%20b,guid=1234')).toBe('/tmp/a b');
    expect(socketOfAddress('tcp:host=x,port=1;unix:abstract=/tmp/dbus-x')).toBe('\0/tmp/dbus-x');
    expect(() => socketOfAddress('tcp:host=x,port=1')).toThrow(/names no unix socket/);
  });
});
