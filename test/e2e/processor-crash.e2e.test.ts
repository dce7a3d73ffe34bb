import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../platform/config.ts';
import { createLogger } from '../../platform/logger.ts';
import { start, type Running } from '../../service/service.ts';
import { describeWith } from '../support/backends.ts';
import { distributedEnv, startApiAndEdge } from './support/distributed-env.ts';
import { startSmtpReceiver } from '../support/smtp-receiver.ts';
import { edgeKnows } from './error-tracking.test-scenarios.ts';
import { eventually, newProject, postBatch, signedInUser, type ServiceUrls } from './support/http-client.ts';
import { spawnRole, type RoleProcess } from './support/spawn-role.ts';

/**
 * Kafka mode: the processor dies (SIGKILL: no graceful stop, no offset commit, its open Postgres
 * transaction dies with the connection) while batches stream in through the edge. A new processor
 * takes over once the group drops the dead member (the session timeout, 10 s) and re-reads what the
 * dead one had not committed. Every event that got a 202 is stored exactly once: in the consumed
 * ledger, in the group counts, and as one ClickHouse row.
 */
const BATCHES = 60;
const EVENTS_PER_BATCH = 10;
const KILL_AFTER = 20;

describeWith(['postgres', 'kafka', 'clickhouse', 'redis'], 'processor crash mid-stream (Kafka)', () => {
  let smtp: Awaited<ReturnType<typeof startSmtpReceiver>>;
  const running: Running[] = [];
  let first: RoleProcess | undefined;
  let env: Record<string, string>;
  let urls: ServiceUrls;
  let api: Running;

  beforeAll(async () => {
    smtp = await startSmtpReceiver();
    env = distributedEnv({ dataDir: await mkdtemp(path.join(os.tmpdir(), 'e2e-crash-')), smtpUrl: smtp.url, overrides: { SETTINGS_REFRESH_MS: '250' } });
    ({ api, urls } = await startApiAndEdge(env, 'e2e-crash', running));
  });

  afterAll(async () => {
    await first?.kill();
    for (const r of [...running].reverse()) await r.stop();
    await smtp?.stop();
  });

  it('every event that got a 202 is stored exactly once after the processor is killed and replaced', { timeout: 180_000 }, async () => {
    const { cookie } = await signedInUser(api.platform, urls);
    // Four keys: 60 requests from one IP stay under 30 per minute per key and IP.
    const p = await newProject(urls, cookie, { ingestKeys: 4 });
    for (const k of p.ingestKeys) await edgeKnows(urls, k);
    const db = api.platform.db;
    const accepted: string[] = [];
    const batchOf = (b: number) =>
      Array.from({ length: EVENTS_PER_BATCH }, (_, e) => ({
        name: 'Error',
        // Three fingerprints; numbers differ, so each stays one issue.
        message: `Job ${['import', 'export', 'sync'][(b + e) % 3]} failed after ${b * 100 + e} ms`,
        extra: { tag: `b${b}e${e}` },
      }));
    const post = async (b: number) => {
      const batch = batchOf(b);
      const res = await postBatch(urls, p.ingestKeys[(b + p.ingestKeys.length) % p.ingestKeys.length]!, batch);
      if (res.status === 202) accepted.push(...batch.map((e) => e.extra.tag));
      return res.status;
    };
    const ledgerCount = async () =>
      Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM error_events_consumed WHERE project_id = $1', [p.id])).rows[0]!.n);

    first = await spawnRole('processor', env);
    // The first processor is consuming: a warm-up batch made it all the way.
    expect(await post(BATCHES)).toBe(202); // numbered past the stream, so its tags are its own
    await eventually('the warm-up batch', async () => ((await ledgerCount()) === EVENTS_PER_BATCH ? true : undefined), 60_000);

    const statuses: number[] = [];
    for (let b = 0; b < BATCHES; b++) {
      if (b === KILL_AFTER) await first.kill();
      statuses.push(await post(b));
      await new Promise((r) => setTimeout(r, 40));
    }
    expect(statuses.filter((s) => s !== 202)).toEqual([]);
    const processedBeforeRestart = await ledgerCount();

    const second = await start('processor', loadConfig(env), createLogger('silent', 'e2e-crash'));
    running.push(second);

    const total = accepted.length;
    expect(total).toBe((BATCHES + 1) * EVENTS_PER_BATCH);
    await eventually('every accepted event in the ledger', async () => ((await ledgerCount()) === total ? true : undefined), 90_000, 200);
    // The new processor did real work: the dead one left events behind.
    expect(processedBeforeRestart).toBeLessThan(total);

    const outcomes = await db.query<{ outcome: string; n: string }>(
      'SELECT outcome, count(*) AS n FROM error_events_consumed WHERE project_id = $1 GROUP BY outcome',
      [p.id],
    );
    expect(outcomes.rows.map((r) => [r.outcome, Number(r.n)])).toEqual([['accepted', total]]);
    const groups = await db.query<{ count: string }>('SELECT count FROM error_groups WHERE project_id = $1', [p.id]);
    expect(groups.rows).toHaveLength(3);
    expect(groups.rows.reduce((n, g) => n + Number(g.count), 0)).toBe(total);

    const analytics = api.platform.analytics;
    const chCount = async () =>
      Number((await analytics.query<{ n: string }>('SELECT count() AS n FROM error_occurrences FINAL WHERE project_id = {p:String}', { p: p.id }))[0]?.n ?? 0);
    await eventually('every accepted event in ClickHouse', async () => ((await chCount()) === total ? true : undefined), 60_000, 200);
    const tags = await analytics.query<{ tag: string }>(
      `SELECT JSONExtractString(extra, 'tag') AS tag FROM error_occurrences FINAL WHERE project_id = {p:String} ORDER BY tag`,
      { p: p.id },
    );
    expect(tags.map((t) => t.tag)).toEqual([...accepted].sort());
    const distinct = await analytics.query<{ n: string }>('SELECT uniqExact(event_id) AS n FROM error_occurrences WHERE project_id = {p:String}', { p: p.id });
    expect(Number(distinct[0]!.n)).toBe(total);
  });
});
