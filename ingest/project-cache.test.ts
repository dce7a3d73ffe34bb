import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Platform } from '../platform/platform.ts';
import { newToken, tokenHash } from '../platform/tokens.ts';
import { TOKEN_PREFIX } from '../schemas/scopes.ts';
import { createTestPlatform } from '../test/support/platform.ts';
import { createIngestProject, revokeKey } from '../test/support/ingest-fixtures.ts';
import { startProjectCache } from './project-cache.ts';

// tokenHash counted, so the test sees how often a token is hashed.
vi.mock('../platform/tokens.ts', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../platform/tokens.ts')>();
  return { ...actual, tokenHash: vi.fn(actual.tokenHash) };
});

let platform: Platform;

beforeAll(async () => {
  platform = await createTestPlatform();
});

afterAll(async () => {
  await platform?.close();
});

describe('edge project cache: keys by raw token', () => {
  it('hashes a known token once per snapshot, never remembers unknown tokens, and forgets a revoked key with the refresh', async () => {
    const p = await createIngestProject(platform);
    const cache = await startProjectCache(platform, { refreshMs: 60_000 });
    try {
      const hashed = vi.mocked(tokenHash);
      hashed.mockClear();
      expect(cache.byToken(p.ingestKey)?.project.id).toBe(p.projectId);
      expect(cache.byToken(p.ingestKey)?.keyId).toBe(p.keyId);
      expect(cache.byToken(p.ingestKey)).toBe(cache.byTokenHash(tokenHash(p.ingestKey)));
      // Two lookups of the token, one hash (the third call above is the test's own).
      expect(hashed.mock.calls.filter(([t]) => t === p.ingestKey)).toHaveLength(2);

      const unknown = newToken(TOKEN_PREFIX.ingestKey);
      hashed.mockClear();
      expect(cache.byToken(unknown)).toBeUndefined();
      expect(cache.byToken(unknown)).toBeUndefined();
      expect(hashed).toHaveBeenCalledTimes(2);

      await revokeKey(platform, p.keyId);
      await cache.refresh();
      expect(cache.byToken(p.ingestKey)).toBeUndefined();
    } finally {
      cache.stop();
    }
  });
});
