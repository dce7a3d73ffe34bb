import type { Clock } from '../../clock.ts';
import type { RateDecision, RateHit, RateLimiter } from '../../ports/rate-limiter.ts';
import { secondsUntil, windowSlots } from './sliding-window.ts';

/**
 * In-memory sliding-window limiter: one node's counts. The rule and its arithmetic are in sliding-window.ts;
 * the Redis limiter's script does the same steps in the same order, so both adapters refuse at the same moments.
 *
 * Memory stays bounded by the keys with a hit in their last window: a key lives only while a slot of it counts,
 * and keys whose slots have all expired are swept every SWEEP_EVERY hits (amortised, no timer to keep a process
 * alive).
 */
const SWEEP_EVERY = 1_000;

/** One key's counts over its window (the Redis limiter keeps the same in a hash). */
interface Window {
  slotMs: number;
  span: number;
  /** Hits counted in the slots that still count. */
  total: number;
  /** The newest slot seen; slots before `last - span` have been dropped. */
  last: number;
  /** Hits per slot (only slots with hits). */
  slots: Map<number, number>;
}

/** Drop the slots that no longer count at `slot`; time never goes back for a key (a lagging clock is clamped). */
function advance(w: Window, slot: number): void {
  if (slot <= w.last) return;
  if (slot - w.last > w.span) {
    w.slots.clear();
    w.total = 0;
  } else {
    for (let s = w.last - w.span; s < slot - w.span; s++) {
      const c = w.slots.get(s);
      if (c !== undefined) {
        w.total -= c;
        w.slots.delete(s);
      }
    }
  }
  w.last = slot;
}

/** The slot from whose start one more hit fits under `limit` (0: one fits now). */
function retrySlot(w: Window, limit: number): number {
  const need = w.total - limit + 1;
  if (need <= 0) return 0;
  let released = 0;
  for (let s = w.last - w.span; s <= w.last; s++) {
    released += w.slots.get(s) ?? 0;
    if (released >= need) return s + w.span + 1;
  }
  return w.last + w.span + 1;
}

export function createMemoryLimiter(clock: Clock): RateLimiter & { readonly size: number } {
  const windows = new Map<string, Window>();
  let hitsSinceSweep = 0;

  function sweep(now: number): void {
    for (const [k, w] of windows) if (Math.floor(now / w.slotMs) - w.last > w.span) windows.delete(k);
  }

  function hitNow(hits: readonly RateHit[]): RateDecision[] {
    const now = clock.now();
    if (++hitsSinceSweep >= SWEEP_EVERY) {
      hitsSinceSweep = 0;
      sweep(now);
    }
    // 1. Bring every key's window to now, and see whether each has room.
    const seen = hits.map((h) => {
      const mapKey = `${h.windowMs}:${h.key}`;
      const { slotMs, span } = windowSlots(h.windowMs);
      const slot = Math.floor(now / slotMs);
      let w = windows.get(mapKey);
      if (!w) {
        w = { slotMs, span, total: 0, last: slot, slots: new Map() };
        windows.set(mapKey, w);
      }
      advance(w, slot);
      return { mapKey, w, room: w.total < h.limit };
    });
    // 2. Count the hit on every key only when all had room.
    const allowed = seen.every((s) => s.room);
    for (const { mapKey, w } of seen) {
      if (allowed) {
        w.slots.set(w.last, (w.slots.get(w.last) ?? 0) + 1);
        w.total++;
      } else if (w.total === 0) windows.delete(mapKey);
    }
    // 3. Each key's decision.
    return hits.map((h, i) => {
      const { w, room } = seen[i]!;
      return { allowed: room, remaining: Math.max(0, h.limit - w.total), retryAfterSec: secondsUntil(retrySlot(w, h.limit), w.slotMs, now) };
    });
  }

  return {
    adapter: 'memory',
    /** Keys held right now (for tests of the sweep). */
    get size() {
      return windows.size;
    },
    async hit(key: string, limit: number, windowMs: number): Promise<RateDecision> {
      return hitNow([{ key, limit, windowMs }])[0]!;
    },
    async hitAll(hits: readonly RateHit[]): Promise<RateDecision[]> {
      return hits.length ? hitNow(hits) : [];
    },
    async close() {
      windows.clear();
    },
  };
}
