import { describe, expect, it } from 'vitest';
import { createPgliteStore } from '../adapters/relational/pglite-store.ts';
import { migrateRelational } from '../migrate.ts';

/**
 * Migration 0025 stores each deploy's artifact directory relative to DATA_DIR: the absolute paths builds wrote before
 * (wherever the data directory was then) become `artifacts/<deployId>`; anything else is left alone.
 */
describe('migration 0025: artifact directories relative to DATA_DIR', () => {
  it('rewrites the paths builds wrote, and nothing else', async () => {
    const db = await createPgliteStore();
    try {
      // Every migration but 0025, as a database made before it has them.
      await db.query('CREATE TABLE IF NOT EXISTS schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())', []);
      await db.query(`INSERT INTO schema_migrations (version) VALUES ('0025_deploy_artifact_dir_relative')`, []);
      await migrateRelational(db);
      await db.query(`INSERT INTO users (id, email, password_hash) VALUES ('usr_a', 'a@example.test', 'x')`, []);
      await db.query(`INSERT INTO projects (id, slug, name, owner_id) VALUES ('prj_a', 'prj-a', 'a', 'usr_a')`, []);
      const rows: Array<[string, string | null]> = [
        ['dep_built', '/srv/old-data/artifacts/dep_built'],
        ['dep_other', '/srv/old-data/artifacts/dep_built'],
        ['dep_elsewhere', '/var/www/site'],
        ['dep_swept', null],
      ];
      for (const [id, dir] of rows) {
        await db.query(
          `INSERT INTO deploys (id, project_id, branch, environment, status, artifact_dir, finished_at) VALUES ($1, 'prj_a', 'main', 'production', 'ready', $2, now())`,
          [id, dir],
        );
      }

      await db.query(`DELETE FROM schema_migrations WHERE version = '0025_deploy_artifact_dir_relative'`, []);
      expect(await migrateRelational(db)).toEqual(['0025_deploy_artifact_dir_relative']);

      const after = await db.query<{ id: string; artifact_dir: string | null }>('SELECT id, artifact_dir FROM deploys ORDER BY id', []);
      expect(after.rows).toEqual([
        { id: 'dep_built', artifact_dir: 'artifacts/dep_built' },
        { id: 'dep_elsewhere', artifact_dir: '/var/www/site' },
        { id: 'dep_other', artifact_dir: '/srv/old-data/artifacts/dep_built' },
        { id: 'dep_swept', artifact_dir: null },
      ]);
    } finally {
      await db.close();
    }
  });
});
