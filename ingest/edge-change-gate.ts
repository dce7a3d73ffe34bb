import type { Platform } from '../platform/platform.ts';
import { LIMITS } from '../schemas/limits.ts';
import { edgeRepository } from './edge-repository.ts';

/**
 * When an edge cache must reload what it holds whole (keys with their projects, platform hosts, flags and flagged
 * deploys): when the `edge` change stamp moved since its last full load (triggers of migration 0048 move it with every
 * committed change to what those reads read), or that load is LIMITS.edgeFullReloadMs old. At rest a tick costs one
 * read of the stamp, or none for a gate that follows another reader's. Each cache has a gate of its own. The stamp is read before the data it guards: a change that
 * commits between the two is in the data and moves the stamp again, so it costs one more load, never a missed one.
 * A gate may `follow` another reader's stamp instead of reading it (the flag cache follows the project cache's, which
 * reads it with the usage in one statement): a stamp read earlier is still read before the data, so the same holds,
 * and a change reaches the follower one refresh of the leader later.
 */
export interface ChangeGate {
  /** The stamp now (or as the followed reader last read it); read it before the data. */
  read(): Promise<string | null>;
  /** A full load is due at `stamp`: it moved since the last full load, or that load is old (or there was none). */
  due(stamp: string | null): boolean;
  /** A full load that read the stamp `stamp` first is in place. */
  loaded(stamp: string | null): void;
}

export function createChangeGate(platform: Pick<Platform, 'clock' | 'db'>, follow?: () => string | null | undefined): ChangeGate {
  let seen: string | null | undefined;
  let loadedAt = 0;
  return {
    /** The followed reader's stamp; the database's until it has read one (or with nothing to follow). */
    async read() {
      const followed = follow?.();
      return followed !== undefined ? followed : edgeRepository.changeStamp(platform.db);
    },
    due(stamp) {
      if (seen === undefined || stamp !== seen) return true;
      const age = platform.clock.now() - loadedAt;
      // A clock set back counts as old: the next load starts the period again.
      return age >= LIMITS.edgeFullReloadMs || age < 0;
    },
    loaded(stamp) {
      seen = stamp;
      loadedAt = platform.clock.now();
    },
  };
}

export interface Refreshes {
  /** Refresh now (`full`: whatever the stamp says), after any refresh waiting or under way; rejects if it failed. */
  run(full: boolean): Promise<void>;
  stop(): void;
}

/**
 * Runs `refresh(false)` every `periodMs` and `refresh(full)` by hand, one at a time in order: a refresh by hand waits
 * for the one under way, so what was committed before the call is in it; a tick is skipped while one waits or runs.
 * Each outcome goes to `outcome` (a failure of a tick is reported nowhere else).
 */
export function startRefreshes(refresh: (full: boolean) => Promise<void>, periodMs: number, outcome: { ok(): void; failed(err: unknown): void }): Refreshes {
  let queue: Promise<void> = Promise.resolve();
  let ticking = false;
  const run = (full: boolean): Promise<void> => {
    const done = queue.then(() => refresh(full));
    queue = done.then(outcome.ok, outcome.failed);
    return done;
  };
  const timer = setInterval(() => {
    if (ticking) return;
    ticking = true;
    run(false)
      .catch(() => undefined)
      .finally(() => {
        ticking = false;
      });
  }, periodMs);
  timer.unref();
  return { run, stop: () => clearInterval(timer) };
}
