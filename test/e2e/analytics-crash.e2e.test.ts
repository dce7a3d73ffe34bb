import { randomUUID } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../platform/config.ts';
import { createLogger } from '../../platform/logger.ts';
import { usageMonth } from '../../domain/usage-month.ts';
import { start, type Running } from '../../service/service.ts';
import { describeWith } from '../support/backends.ts';
import { distributedEnv, startApiAndEdge } from './support/distributed-env.ts';
import { edgeKnows } from './error-tracking.test-scenarios.ts';
import { eventually, http, newProject, signedInUser, type ServiceUrls } from './support/http-client.ts';
import { spawnRole, type RoleProcess } from './support/spawn-role.ts';

/**
 * Kafka mode, analytics: the processor dies (SIGKILL: no offset commit, its open Postgres transaction dies with the
 * connection, a ClickHouse insert may already have landed) while batches stream in. A new processor re-reads what the
 * dead one had not committed. Every accepted event is one visible row and is counted once towards the quota.
 */
const BATCHES = 60;
const EVENTS_PER_BATCH = 20;
const KILL_AFTER = 20;

describeWith(['postgres', 'kafka', 'clickhouse', 'redis'], 'analytics: processor crash mid-stream (Kafka)', () => {
  const running: Running[] = [];
  let first: RoleProcess | undefined;
  let env: Record<string, string>;
  let urls: ServiceUrls;
  let api: Running;

  beforeAll(async () => {
    env = distributedEnv({
      dataDir: await mkdtemp(path.join(os.tmpdir(), 'e2e-analytics-crash-')),
      smtpUrl: 'smtp://127.0.0.1:1',
      overrides: { SETTINGS_REFRESH_MS: '250' },
    });
    ({ api, urls } = await startApiAndEdge(env, 'e2e-analytics-crash', running));
  });

  afterAll(async () => {
    await first?.kill();
    for (const r of [...running].reverse()) await r.stop();
  });

  it('every accepted event is one row and counted once after the processor is killed and replaced', { timeout: 180_000 }, async () => {
    const { cookie } = await signedInUser(api.platform, urls);
    const p = await newProject(urls, cookie);
    await edgeKnows(urls, p.ingestKey);
    const accepted: string[] = [];
    const post = async () => {
      const batch = Array.from({ length: EVENTS_PER_BATCH }, (_, i) => ({
        event: 'job_done',
        distinctId: `worker-${i % 4}`,
        uuid: randomUUID(),
        timestamp: Date.now(),
        properties: { i },
      }));
      const res = await http(`${urls.ingestUrl}/v1/analytics/i`, { method: 'POST', headers: { authorization: `Bearer ${p.ingestKey}` }, body: { batch } });
      if (res.status === 202) accepted.push(...batch.map((e) => e.uuid));
      return res.status;
    };
    const ch = api.platform.analytics;
    const finalCount = async () =>
      Number((await ch.query<{ n: string }>('SELECT count() AS n FROM analytics_events FINAL WHERE project_id = {p:String}', { p: p.id }))[0]?.n ?? 0);

    first = await spawnRole('processor', env);
    expect(await post()).toBe(202);
    await eventually('the warm-up batch', async () => ((await finalCount()) === EVENTS_PER_BATCH ? true : undefined), 60_000);

    const statuses: number[] = [];
    for (let b = 0; b < BATCHES; b++) {
      if (b === KILL_AFTER) await first.kill();
      statuses.push(await post());
      await new Promise((r) => setTimeout(r, 30));
    }
    expect(statuses.filter((s) => s !== 202)).toEqual([]);
    const storedBeforeRestart = await finalCount();

    running.push(await start('processor', loadConfig(env), createLogger('silent', 'e2e-analytics-crash')));
    const total = accepted.length;
    expect(total).toBe((BATCHES + 1) * EVENTS_PER_BATCH);
    await eventually('every accepted event in ClickHouse', async () => ((await finalCount()) === total ? true : undefined), 90_000, 200);
    expect(storedBeforeRestart).toBeLessThan(total);

    const ids = await ch.query<{ id: string }>('SELECT event_id AS id FROM analytics_events FINAL WHERE project_id = {p:String} ORDER BY id', { p: p.id });
    expect(ids.map((r) => r.id)).toEqual([...accepted].sort());
    // The usage commits after its batch's rows are in ClickHouse: waited for too, not read once.
    const counted = async () =>
      Number(
        (
          await api.platform.db.query<{ accepted: string }>('SELECT accepted FROM analytics_monthly_usage WHERE project_id = $1 AND month = $2', [
            p.id,
            usageMonth(Date.now()),
          ])
        ).rows[0]?.accepted ?? 0,
      );
    await eventually('every accepted event counted in the usage', async () => ((await counted()) >= total ? true : undefined), 30_000, 200);
    expect(await counted()).toBe(total);
  });
});
