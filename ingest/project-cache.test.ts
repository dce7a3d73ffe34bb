import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Platform } from '../platform/platform.ts';
import { newToken, tokenHash } from '../platform/tokens.ts';
import { TOKEN_PREFIX } from '../schemas/scopes.ts';
import { createTestPlatform } from '../test/support/platform.ts';
import { createIngestProject, revokeKey } from '../test/support/ingest-fixtures.ts';
import { startProjectCache } from './project-cache.ts';

let platform: Platform;

beforeAll(async () => {
  platform = await createTestPlatform();
});

afterAll(async () => {
  await platform?.close();
});

describe('edge project cache: keys by raw token', () => {
  it('resolves a known token on every lookup, never an unknown one (also once a key with it exists), and forgets a revoked key with the refresh', async () => {
    const p = await createIngestProject(platform);
    const cache = await startProjectCache(platform, { refreshMs: 60_000 });
    try {
      expect(cache.byToken(p.ingestKey)?.project.id).toBe(p.projectId);
      expect(cache.byToken(p.ingestKey)?.keyId).toBe(p.keyId);
      expect(cache.byToken(p.ingestKey)).toBe(cache.byTokenHash(tokenHash(p.ingestKey)));

      const unknown = newToken(TOKEN_PREFIX.ingestKey);
      expect(cache.byToken(unknown)).toBeUndefined();
      expect(cache.byToken(unknown)).toBeUndefined();
      // A key created after the snapshot resolves with the next refresh: a miss was not remembered.
      const later = await createIngestProject(platform);
      expect(cache.byToken(later.ingestKey)).toBeUndefined();
      await cache.refresh();
      expect(cache.byToken(later.ingestKey)?.keyId).toBe(later.keyId);

      await revokeKey(platform, p.keyId);
      await cache.refresh();
      expect(cache.byToken(p.ingestKey)).toBeUndefined();
    } finally {
      cache.stop();
    }
  });
});
