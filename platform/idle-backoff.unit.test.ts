import { describe, expect, it } from 'vitest';
import { idleBackoff, idleBackoffMs } from './idle-backoff.ts';

describe('idle back-off (issue 44: nothing polls when nothing happens)', () => {
  it('waits the period after work, doubles per idle look, and stops at the cap', () => {
    expect([0, 1, 2, 3, 4, 40].map((n) => idleBackoffMs(250, 750, n))).toEqual([250, 500, 750, 750, 750, 750]);
    expect([0, 1, 2, 3, 4].map((n) => idleBackoffMs(2_000, 16_000, n))).toEqual([2_000, 4_000, 8_000, 16_000, 16_000]);
  });

  it('skips the ticks in between while idle, and looks at every tick again once a look finds work or a wake', () => {
    const b = idleBackoff(250, 750);
    const looks: number[] = [];
    const tickAt = (t: number, found: boolean) => {
      if (!b.due(t)) return;
      looks.push(t);
      b.looked(found, t);
    };
    for (let t = 0; t <= 3_000; t += 250) tickAt(t, false);
    // 0, then 500 later, then every 750.
    expect(looks).toEqual([0, 500, 1_250, 2_000, 2_750]);
    expect(b.idleLooks).toBe(5);
    b.wake();
    expect(b.due(3_000)).toBe(true);
    b.looked(true, 3_000);
    expect(b.due(3_250)).toBe(true);
    b.looked(false, 3_250);
    expect(b.due(3_500)).toBe(false);
    expect(b.due(3_750)).toBe(true);
  });
});
