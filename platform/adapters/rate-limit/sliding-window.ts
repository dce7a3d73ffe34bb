/**
 * The rule both rate limiter adapters keep, with the same arithmetic (in JS in memory-limiter.ts, in Lua in
 * redis-limiter.ts), so they refuse at the same moments: **no more than `limit` hits are let through in any
 * `windowMs`**, wherever that window starts. A window is cut into SLOTS_PER_WINDOW slots; a hit is counted in the
 * slot it falls in, and a slot keeps counting until the last instant it holds is a whole window old (span + 1
 * slots in all, the current one included). So the count a hit sees covers every earlier hit of the last
 * `windowMs`, plus at most one slot more: the rule is strict, and conservative by at most 1/60 of the window (a
 * client that spent a minute's limit at once waits between 60 and 61 seconds).
 *
 * Why not a library: rate-limiter-flexible's Redis and memory limiters are fixed windows that start at a key's
 * first hit (the same double burst at their end); rolling-rate-limiter keeps every hit in a sorted set (memory
 * grows with the limit, and limits here go to 120,000 per key); @upstash/ratelimit needs Upstash's REST client
 * and its sliding window is a weighted estimate that can let more than the limit through. A token bucket or
 * GCRA with a burst of `limit` refills while it is spent, so it lets up to 2 x limit - 1 through in one window:
 * the limits are stated as "N a minute", and this rule keeps that sentence true.
 *
 * A refused hit counts nothing (so Retry-After tells the truth: a client that keeps knocking gets in as soon as
 * it says), and a request that one of its keys refuses counts on none of them (an address over its own limit
 * does not spend its project's).
 */
export const SLOTS_PER_WINDOW = 60;

export interface WindowSlots {
  /** Length of one slot, whole milliseconds. */
  slotMs: number;
  /** Slots before the current one that still count: together they cover at least `windowMs`. */
  span: number;
}

export function windowSlots(windowMs: number): WindowSlots {
  const slotMs = Math.max(1, Math.ceil(windowMs / SLOTS_PER_WINDOW));
  return { slotMs, span: Math.ceil(windowMs / slotMs) };
}

/**
 * Whole seconds until the next hit would be let through, at least 1 (Retry-After). `retrySlot` is the slot from
 * whose start it would be, or 0 when one would be now.
 */
export function secondsUntil(retrySlot: number, slotMs: number, now: number): number {
  if (retrySlot === 0) return 1;
  return Math.max(1, Math.ceil((retrySlot * slotMs - now) / 1000));
}
