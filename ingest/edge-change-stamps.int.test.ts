import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { expect } from 'vitest';
import { backendUrl, describeWith } from '../test/support/backends.ts';
import { createTestPlatform } from '../test/support/platform.ts';
import { defineEdgeChangeStampScenarios } from './edge-change-stamps.test-scenarios.ts';

/**
 * The same scenarios on the real Postgres server, in a schema of their own (migrated from empty at start): on the
 * shared database other test files write keys and projects all the time, which moves the stamp, and the scenarios
 * count what a refresh reads when nothing changes. The schema is dropped after, in a database named for tests only.
 */
describeWith(['postgres'], 'edge caches at rest on Postgres', () => {
  const schema = `ct_stamps_${randomBytes(5).toString('hex')}`;
  defineEdgeChangeStampScenarios('edge caches at rest on Postgres (a schema of their own)', async (clock) => {
    const url = new URL(backendUrl('postgres')!);
    const admin = new pg.Client({ connectionString: url.toString() });
    await admin.connect();
    try {
      await admin.query(`CREATE SCHEMA ${schema}`);
    } finally {
      await admin.end();
    }
    url.searchParams.set('options', `-c search_path=${schema}`);
    const platform = await createTestPlatform({ env: { DATABASE_URL: url.toString(), SETTINGS_REFRESH_MS: '100' }, overrides: { clock } });
    expect(platform.db.adapter).toBe('postgres');
    return {
      ...platform,
      async close() {
        await platform.close();
        const dropper = new pg.Client({ connectionString: backendUrl('postgres')! });
        await dropper.connect();
        try {
          const db = (await dropper.query<{ name: string }>('SELECT current_database() AS name')).rows[0]!.name;
          if (!db.includes('test')) throw new Error(`refusing to drop schema ${schema} in database "${db}": its name lacks "test"`);
          await dropper.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
        } finally {
          await dropper.end();
        }
      },
    };
  });
});
