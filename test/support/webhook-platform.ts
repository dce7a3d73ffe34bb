import { ManualClock } from '../../platform/clock.ts';
import type { Platform } from '../../platform/platform.ts';
import { newId } from '../../platform/tokens.ts';
import { allowAllLimiter } from './ingest-fixtures.ts';
import { createTestPlatform } from './platform.ts';
import type { OutboundUrlGuard } from '../../platform/ports/outbound-url-guard.ts';
import { createTestOutboundGuard } from '../../platform/adapters/outbound/test-guard.ts';
import { inertAnalytics, inertMailer } from './stubs.ts';

/**
 * A platform for webhook tests: relational store (PGlite, or the real Postgres), the in-process bus
 * with its log (createTestPlatform), a manual clock, and the test receiver trusted. Webhooks touch neither the
 * analytical store, the limiter nor the mailer, so those are inert here (keeps chDB out of it).
 */

export async function createWebhookTestPlatform(
  opts: { postgres?: boolean; ca?: string; outbound?: OutboundUrlGuard; clock?: ManualClock; keepAnalytics?: boolean } = {},
): Promise<Platform & { clock: ManualClock }> {
  const clock = opts.clock ?? new ManualClock(Date.now());
  const platform = await createTestPlatform({
    real: { postgres: opts.postgres },
    overrides: {
      clock,
      ...(opts.keepAnalytics ? {} : { analytics: inertAnalytics, limiter: allowAllLimiter, mailer: inertMailer }),
      outbound: opts.outbound ?? createTestOutboundGuard({ ca: opts.ca }),
    },
  });
  return platform as Platform & { clock: ManualClock };
}

/** A user and a project straight in the database (the processor side needs no HTTP sign-up). */
export async function insertProject(platform: Platform): Promise<{ projectId: string; userId: string }> {
  const userId = newId('usr_');
  const projectId = newId('prj_');
  await platform.db.query('INSERT INTO users (id, email, password_hash) VALUES ($1, $2, $3)', [userId, `${userId}@example.test`, 'x']);
  await platform.db.query('INSERT INTO projects (id, slug, name, owner_id) VALUES ($1, $2, $3, $4)', [
    projectId,
    projectId.replace('_', '-'),
    'Webhooks test',
    userId,
  ]);
  return { projectId, userId };
}

/** An endpoint row straight in the database: lets a test place a URL the API would refuse. */
export async function insertEndpoint(
  platform: Platform,
  e: { projectId: string; url: string; events?: string[]; maxAttempts?: number; secret?: string },
): Promise<{ id: string; secret: string }> {
  const id = newId('whk_');
  const secret = e.secret ?? `whsec_${newId('').slice(0, 32)}`;
  const now = platform.clock.now();
  await platform.db.query(
    'INSERT INTO webhook_endpoints (id, project_id, url, events, max_attempts, secret, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $7)',
    [id, e.projectId, e.url, e.events ?? [], e.maxAttempts ?? 6, secret, new Date(now)],
  );
  return { id, secret };
}
