import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Platform } from '../../platform/platform.ts';
import { usageMonth } from '../../domain/usage-month.ts';
import { describeWith } from '../../test/support/backends.ts';
import { createIngestProject } from '../../test/support/ingest-fixtures.ts';
import { createTestPlatform, type TestPlatformOptions } from '../../test/support/platform.ts';
import { applyAnalyticsRetention } from './analytics-consumer.ts';
import { createAnalyticsPipeline, type AnalyticsBatchInput } from './analytics-pipeline.ts';

/**
 * The analytics pipeline's guarantees on each pair of stores (PGlite + chDB, Postgres + ClickHouse): a batch
 * delivered again (a processor crashed after storing it, before its offset was committed) adds no rows, not even
 * before ClickHouse merges, and counts towards the quota once; the retention TTL is set from configuration.
 */
function scenarios(options: TestPlatformOptions) {
  let platform: Platform;
  beforeAll(async () => {
    platform = await createTestPlatform(options);
  });
  afterAll(async () => platform?.close());

  const batchOf = (projectId: string, n: number): AnalyticsBatchInput => ({
    v: 1,
    batchId: randomUUID(),
    projectId,
    originHost: null,
    receivedAt: Date.now(),
    events: Array.from({ length: n }, (_, i) => ({
      uuid: randomUUID(),
      event: 'pageview',
      distinctId: `u${i % 3}`,
      properties: { i },
      timestamp: Date.now() - i,
    })),
  });
  const rows = async (projectId: string) =>
    Number((await platform.analytics.query<{ n: number }>('SELECT count() AS n FROM analytics_events WHERE project_id = {p:String}', { p: projectId }))[0]!.n);
  const usage = async (projectId: string) =>
    Number(
      (
        await platform.db.query<{ accepted: string }>('SELECT accepted FROM analytics_monthly_usage WHERE project_id = $1 AND month = $2', [
          projectId,
          usageMonth(Date.now()),
        ])
      ).rows[0]?.accepted ?? 0,
    );

  it('a re-delivered batch adds no rows and is counted once', async () => {
    const { projectId } = await createIngestProject(platform);
    const handle = createAnalyticsPipeline(platform);
    const batch = batchOf(projectId, 50);
    expect(await handle([batch])).toEqual({ accepted: 50, duplicates: 0, dropped: {} });
    // The same delivery again, and again through a new pipeline (a replacement processor).
    expect(await handle([batch])).toEqual({ accepted: 0, duplicates: 50, dropped: {} });
    expect(await createAnalyticsPipeline(platform)([batch])).toEqual({ accepted: 0, duplicates: 50, dropped: {} });
    expect(await rows(projectId)).toBe(50);
    expect(await usage(projectId)).toBe(50);
    // A delivery holding a new batch and a re-delivered one: only the new one adds rows and counts.
    const second = batchOf(projectId, 10);
    expect(await handle([second, batch])).toEqual({ accepted: 10, duplicates: 50, dropped: {} });
    expect(await rows(projectId)).toBe(60);
    expect(await usage(projectId)).toBe(60);
  });

  it('drops events of a project that no longer exists, counted by reason', async () => {
    expect(await createAnalyticsPipeline(platform)([batchOf('prj_gone', 3)])).toEqual({ accepted: 0, duplicates: 0, dropped: { unknown_project: 3 } });
  });

  it('sets the retention TTL once, from ANALYTICS_RETENTION_DAYS', async () => {
    await applyAnalyticsRetention(platform, 30);
    const [t] = await platform.analytics.query<{ engine_full: string }>(
      `SELECT engine_full FROM system.tables WHERE database = currentDatabase() AND name = 'analytics_events'`,
    );
    expect(t!.engine_full).toContain('toIntervalDay(30)');
    await applyAnalyticsRetention(platform, 365);
    const [u] = await platform.analytics.query<{ engine_full: string }>(
      `SELECT engine_full FROM system.tables WHERE database = currentDatabase() AND name = 'analytics_events'`,
    );
    expect(u!.engine_full).toContain('toIntervalDay(365)');
  });
}

describe('analytics pipeline, embedded (PGlite + chDB)', () => scenarios({}));
describeWith(['postgres', 'clickhouse'], 'analytics pipeline, Postgres + ClickHouse', () => scenarios({ real: { postgres: true, clickhouse: true } }));
