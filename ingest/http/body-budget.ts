import { refusal, type Refusal } from '../refusals.ts';

/**
 * How many bytes of large request bodies the edge holds at once. Sentry's envelopes may be 20 MB as sent and 20 MB
 * once inflated (LIMITS.sentryIngest), and a browser's DSN key is public: without a bound, a few hundred envelopes
 * at once (or small gzip bombs, each inflating to the limit) would take the process's memory. A body past
 * LIMITS.largeBodies.freeBytes reserves its size before it is read, an inflation off the event loop reserves its
 * limit before it starts; both are given back when the request is answered. What does not fit is refused at once,
 * 503 with a short Retry-After (`edge_busy`), and nothing already taken is touched.
 */
export interface BodyBudget {
  /** Reserves `bytes`; false (nothing reserved) when they do not fit. */
  take(bytes: number): boolean;
  give(bytes: number): void;
  /** Bytes reserved now. */
  readonly used: number;
}

export function createBodyBudget(totalBytes: number): BodyBudget {
  let used = 0;
  return {
    take(bytes) {
      if (bytes <= 0) return true;
      if (used + bytes > totalBytes) return false;
      used += bytes;
      return true;
    },
    give(bytes) {
      if (bytes > 0) used = Math.max(0, used - bytes);
    },
    get used() {
      return used;
    },
  };
}

/** One request's reservations, given back together. */
export function reservations(budget: BodyBudget) {
  let held = 0;
  return {
    take(bytes: number): boolean {
      if (!budget.take(bytes)) return false;
      held += Math.max(0, bytes);
      return true;
    },
    release(): void {
      budget.give(held);
      held = 0;
    },
  };
}

/** The answer when a body does not fit: 503 with a short Retry-After (schemas/edge-refusals.ts). */
export const edgeBusy = (): Refusal => refusal('edge_busy', 'the edge is holding as many large bodies as it may; retry in a moment');
