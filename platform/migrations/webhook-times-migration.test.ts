import { describe, expect, it } from 'vitest';
import { createPgliteStore } from '../adapters/relational/pglite-store.ts';
import { migrateRelational } from '../migrate.ts';

/** Migration 0017 turns the webhook tables' epoch-millisecond columns into timestamptz, keeping every value. */
describe('migration 0017: webhook times', () => {
  it('converts existing rows in place, to the millisecond', async () => {
    const db = await createPgliteStore();
    try {
      // Every migration before 0017, as a database made before this issue has them.
      await db.query('CREATE TABLE IF NOT EXISTS schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())', []);
      await db.query(`INSERT INTO schema_migrations (version) VALUES ('0017_webhook_times')`, []);
      await migrateRelational(db);
      const t = Date.UTC(2026, 10, 25, 12, 34, 56, 789);
      await db.query(`INSERT INTO users (id, email, password_hash) VALUES ('usr_m', 'm@example.test', 'x')`, []);
      await db.query(`INSERT INTO projects (id, slug, name, owner_id) VALUES ('prj_m', 'prj-m', 'm', 'usr_m')`, []);
      await db.query(
        `INSERT INTO webhook_endpoints (id, project_id, url, secret, previous_secret, previous_secret_until, created_at, updated_at)
         VALUES ('whk_m', 'prj_m', 'https://example.test/h', 's', 'p', $1, $2, $3)`,
        [t + 86_400_000, t, t + 1],
      );
      await db.query(
        `INSERT INTO webhook_deliveries (id, project_id, endpoint_id, event_id, event, data, status, max_attempts, next_attempt_at, lease_until, created_at, updated_at)
         VALUES ('dlv_m', 'prj_m', 'whk_m', 'evt_m', 'webhook.test', '{}', 'sending', 6, $1, $2, $3, $3)`,
        [t + 10_000, t + 60_000, t],
      );
      await db.query(
        `INSERT INTO webhook_attempts (delivery_id, endpoint_id, attempt, status, started_at, finished_at, next_attempt_at) VALUES ('dlv_m', 'whk_m', 1, 'failed', $1, $2, NULL)`,
        [t, t + 250],
      );

      await db.query(`DELETE FROM schema_migrations WHERE version = '0017_webhook_times'`, []);
      expect(await migrateRelational(db)).toEqual(['0017_webhook_times']);

      const ms = (v: unknown) => (v instanceof Date ? v.getTime() : v);
      const e = (await db.query<Record<string, unknown>>('SELECT previous_secret_until, created_at, updated_at FROM webhook_endpoints', [])).rows[0]!;
      expect([e.previous_secret_until, e.created_at, e.updated_at].map(ms)).toEqual([t + 86_400_000, t, t + 1]);
      const d = (await db.query<Record<string, unknown>>('SELECT next_attempt_at, lease_until, created_at FROM webhook_deliveries', [])).rows[0]!;
      expect([d.next_attempt_at, d.lease_until, d.created_at].map(ms)).toEqual([t + 10_000, t + 60_000, t]);
      const a = (await db.query<Record<string, unknown>>('SELECT started_at, finished_at, next_attempt_at FROM webhook_attempts', [])).rows[0]!;
      expect([a.started_at, a.finished_at, a.next_attempt_at].map(ms)).toEqual([t, t + 250, null]);
      const types = await db.query<{ data_type: string }>(
        `SELECT DISTINCT data_type FROM information_schema.columns WHERE table_name IN ('webhook_endpoints', 'inboxes', 'webhook_deliveries', 'webhook_attempts') AND (column_name LIKE '%\\_at' OR column_name LIKE '%\\_until')`,
        [],
      );
      expect(types.rows.map((r) => r.data_type)).toEqual(['timestamp with time zone']);
    } finally {
      await db.close();
    }
  });
});
