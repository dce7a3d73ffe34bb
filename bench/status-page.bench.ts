/**
 * The status page (issue 43), printed as JSON: `GET /status/:slug` (the HTML page) and `GET /v1/status/:slug/badge.svg`
 * against `GET /v1/status/:slug` (the JSON they are rendered from), on one API in one sitting, each the cached answer
 * (the page and the badge are rendered once per version of the JSON). autocannon in a child process, rounds
 * alternating the routes. Aim: the page and the badge at least 0.8x the JSON's requests per second; a monitor's badge
 * (`?monitor=&window=`) is compared with the JSON asked with a query string too (`?_=`), which costs the same parsing.
 *
 *   npx tsx bench/status-page.bench.ts [--monitors 5] [--duration 8] [--connections 50] [--rounds 3]
 */
import os from 'node:os';
import { buildApiApp } from '../api/app.ts';
import { newId } from '../platform/tokens.ts';
import { allowAllLimiter } from '../test/support/ingest-fixtures.ts';
import { createTestPlatform } from '../test/support/platform.ts';
import { inertMailer } from '../test/support/stubs.ts';
import { insertProject } from '../test/support/webhook-platform.ts';
import { cannon } from './support/autocannon.ts';
import { numberArg } from './support/cli-args.ts';

const MONITORS = numberArg('monitors', 5);
const DURATION = numberArg('duration', 8);
const CONNECTIONS = numberArg('connections', 50);
const ROUNDS = numberArg('rounds', 3);
const HOUR = 3_600_000;
const log = (s: string) => process.stderr.write(`${s}\n`);

async function main() {
  const platform = await createTestPlatform({ overrides: { mailer: inertMailer, limiter: allowAllLimiter } });
  const { projectId } = await insertProject(platform);
  const slug = (await platform.db.query<{ slug: string }>('SELECT slug FROM projects WHERE id = $1', [projectId])).rows[0]!.slug;
  // Public monitors with 90 days of hourly rollups (a few failures), as a page in use has.
  const hour = Math.floor(Date.now() / HOUR) * HOUR;
  const ids: string[] = [];
  for (let i = 0; i < MONITORS; i++) {
    const id = newId('mon_');
    ids.push(id);
    await platform.db.query(
      `INSERT INTO uptime_monitors (id, project_id, name, url, interval_sec, timeout_ms, public, state, next_check_at, created_at, updated_at)
       VALUES ($1, $2, $3, 'https://example.com/', 60, 10000, true, 'up', now() + interval '1 day', now(), now())`,
      [id, projectId, `Service ${i + 1}`],
    );
    await platform.db.query(
      `INSERT INTO uptime_hourly (monitor_id, hour, checks, failures, ms_sum, ms_checks)
       SELECT $1, to_timestamp(($2::bigint - h::bigint * 3600000) / 1000.0), 60, CASE WHEN h % 97 = 0 THEN 2 ELSE 0 END, 60 * (100 + h % 50), 60
       FROM generate_series(0, 90 * 24 - 1) AS h`,
      [id, hour],
    );
  }
  const app = await buildApiApp(platform);
  const base = await app.listen({ port: 0, host: '127.0.0.1' });
  // The overall badge, and one monitor's (a query string costs the framework about as much on the JSON route: `?_=`).
  const routes = {
    json: `/v1/status/${slug}`,
    page: `/status/${slug}`,
    badge: `/v1/status/${slug}/badge.svg`,
    monitorBadge: `/v1/status/${slug}/badge.svg?monitor=${ids[0]}&window=7d`,
    jsonWithQuery: `/v1/status/${slug}?_=1700000000`,
  };
  const bytes: Record<string, number> = {};
  for (const [name, path] of Object.entries(routes)) {
    const res = await fetch(`${base}${path}`);
    const body = await res.text();
    if (res.status !== 200) throw new Error(`${name} answered ${res.status}: ${body.slice(0, 200)}`);
    bytes[name] = Buffer.byteLength(body);
  }
  const rounds = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const r: Record<string, { rps: number; p99ms: number; non2xx: number; errors: number }> = {};
    for (const [name, path] of Object.entries(routes)) {
      const c = await cannon(`${base}${path}`, { connections: CONNECTIONS, durationSec: DURATION });
      r[name] = { rps: Math.round(c.requests.average), p99ms: c.latency.p99, non2xx: c.non2xx, errors: c.errors };
    }
    const line = {
      round,
      ...r,
      pageRatio: +(r.page!.rps / r.json!.rps).toFixed(2),
      badgeRatio: +(r.badge!.rps / r.json!.rps).toFixed(2),
      monitorBadgeRatio: +(r.monitorBadge!.rps / r.jsonWithQuery!.rps).toFixed(2),
    };
    log(`round ${round}: ${JSON.stringify(line)}`);
    rounds.push(line);
  }
  await app.close();
  await platform.close();
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(
    JSON.stringify(
      {
        bench: 'status-page',
        machine: { nproc: os.cpus().length, cpu: os.cpus()[0]?.model, node: process.version },
        store: platform.db.adapter,
        monitors: MONITORS,
        bytes,
        connections: CONNECTIONS,
        durationSec: DURATION,
        rounds,
        median: {
          pageRatio: median(rounds.map((r) => r.pageRatio)),
          badgeRatio: median(rounds.map((r) => r.badgeRatio)),
          monitorBadgeRatio: median(rounds.map((r) => r.monitorBadgeRatio)),
        },
      },
      null,
      2,
    ),
  );
  process.exit(0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
