import type { Platform } from '../platform/platform.ts';
import { edgeRepository } from './edge-repository.ts';

/**
 * When each ingest key was last used, for people to see in the key list ("Last used"), without a database write
 * per request: the edge notes which keys it accepted requests with, and writes them out at most once a
 * FLUSH_MS (one UPDATE for all of them), off the request path. A failed write is retried at the next flush.
 */
const FLUSH_MS = 60_000;

export interface KeyUsage {
  /** A request with this key was accepted. */
  used(keyId: string): void;
  /** Write what was noted (tests; also at close). */
  flush(): Promise<void>;
  stop(): Promise<void>;
}

export function startKeyUsage(platform: Pick<Platform, 'db' | 'clock' | 'logger'>, flushMs = FLUSH_MS): KeyUsage {
  let noted = new Set<string>();
  let writing: Promise<void> = Promise.resolve();
  const flush = (): Promise<void> => {
    if (!noted.size) return writing;
    const ids = [...noted];
    noted = new Set();
    writing = writing
      .then(() => edgeRepository.markKeysUsed(platform.db, ids, platform.clock.now()))
      .then(
        () => undefined,
        (err) => {
          for (const id of ids) noted.add(id);
          platform.logger.warn({ err }, "recording ingest keys' last use failed; retried at the next flush");
        },
      );
    return writing;
  };
  const timer = setInterval(() => void flush(), flushMs);
  timer.unref();
  return {
    used: (keyId) => void noted.add(keyId),
    flush,
    async stop() {
      clearInterval(timer);
      await flush();
    },
  };
}
