/**
 * Deliveries in flight per receiver origin (LIMITS.webhook.perReceiverConnections): a delivery waits for its
 * receiver's gate before it takes one of the dispatcher's send slots, so a slow receiver holds at most its own gate's
 * worth of slots and the others keep their rate (Svix and Hookdeck isolate receivers the same way). A wait has a
 * bound: past it, `acquire` answers false and the delivery is handed back for later, before its lease runs out.
 */
export interface ReceiverGates {
  /** True once a place is free for `origin`; false after `waitMs` without one. */
  acquire(origin: string, waitMs: number): Promise<boolean>;
  release(origin: string): void;
  /** Deliveries in flight to `origin` (tests). */
  active(origin: string): number;
}

interface Gate {
  active: number;
  waiting: Array<(ok: boolean) => void>;
}

export function createReceiverGates(max: number): ReceiverGates {
  const gates = new Map<string, Gate>();
  return {
    acquire(origin, waitMs) {
      let g = gates.get(origin);
      if (!g) gates.set(origin, (g = { active: 0, waiting: [] }));
      if (g.active < max) {
        g.active++;
        return Promise.resolve(true);
      }
      const gate = g;
      return new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => {
          const at = gate.waiting.indexOf(wake);
          if (at !== -1) gate.waiting.splice(at, 1);
          resolve(false);
        }, waitMs);
        // The place is handed over as it is released (active does not change).
        const wake = (ok: boolean) => {
          clearTimeout(timer);
          resolve(ok);
        };
        gate.waiting.push(wake);
      });
    },
    release(origin) {
      const g = gates.get(origin);
      if (!g) return;
      const next = g.waiting.shift();
      if (next) return next(true);
      g.active--;
      if (g.active <= 0) gates.delete(origin);
    },
    active: (origin) => gates.get(origin)?.active ?? 0,
  };
}
