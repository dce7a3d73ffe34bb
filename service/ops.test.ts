import { mkdtemp } from 'node:fs/promises';
import net from 'node:net';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type Role } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { createInProcessBus } from '../platform/adapters/bus/in-process-bus.ts';
import { createPgliteStore } from '../platform/adapters/relational/pglite-store.ts';
import { createMemoryLimiter } from '../platform/adapters/rate-limit/memory-limiter.ts';
import { systemClock } from '../platform/clock.ts';
import type { RelationalStore } from '../platform/ports/relational-store.ts';
import { createIngestProject } from '../test/support/ingest-fixtures.ts';
import { httpRequest } from '../test/support/http-request.ts';
import { metricValue } from '../test/support/metrics-text.ts';
import { prng } from '../test/support/prng.ts';
import { inertAnalytics, inertMailer } from '../test/support/stubs.ts';
import { start } from './service.ts';

/**
 * The operator's routes (platform/ops/) as each role serves them: `npm start`'s one port for every role, and the
 * processor's, builder's and API's own ports when each runs alone. Embedded stand-ins for every backend (a PGlite in
 * memory whose failure a test switches on, the in-process bus with its log in the test's DATA_DIR), so nothing here
 * needs a server.
 */
const TOKEN = 'ops-test-metrics-token-42';
const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent', 'ops-test');

/** A relational store that fails every query while `down` is set: a database gone away. */
function switchableDb(db: RelationalStore) {
  const state = { down: false };
  const gone = () => Promise.reject(new Error('connection terminated'));
  const store: RelationalStore = {
    adapter: db.adapter,
    query: (sql, params) => (state.down ? gone() : db.query(sql, params)),
    transaction: (fn) => (state.down ? gone() : db.transaction(fn)),
    close: () => db.close(),
  };
  return { store, state };
}

async function startRole(role: Role, env: Record<string, string> = {}) {
  const db = switchableDb(await createPgliteStore());
  const config = loadConfig({
    DATA_DIR: await mkdtemp(path.join(os.tmpdir(), 'ops-test-')),
    LOG_LEVEL: 'silent',
    PORT: '0',
    HOST: '127.0.0.1',
    SETTINGS_REFRESH_MS: '100',
    METRICS_TOKEN: TOKEN,
    ...env,
  });
  const running = await start(role, config, logger, {
    testing: {
      quietFirstStart: true,
      uptime: false,
      overrides: {
        db: db.store,
        analytics: inertAnalytics,
        bus: createInProcessBus({ logDir: path.join(config.DATA_DIR, 'bus') }),
        limiter: createMemoryLimiter(systemClock),
        mailer: inertMailer,
      },
    },
  });
  return { running, db: db.state, base: `http://127.0.0.1:${running.port}` };
}

const get = (base: string, url: string, headers: Record<string, string> = {}) => httpRequest(base, 'GET', url, headers);
const scrape = async (base: string) => {
  const res = await get(base, '/metrics', { authorization: `Bearer ${TOKEN}` });
  expect(res.status).toBe(200);
  expect(res.type).toMatch(/^text\/plain; version=0\.0\.4/);
  return res.body;
};

/** Random requests to the operator routes: every answer below 500, JSON unless it is the metrics text; still serving. */
async function fuzzOpsRoutes(base: string, seed: number): Promise<void> {
  const rnd = prng(seed);
  const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
  const ascii = (n: number) => Array.from({ length: n }, () => String.fromCharCode(33 + Math.floor(rnd() * 93))).join('');
  for (let i = 0; i < 200; i++) {
    const route = pick(['/livez', '/readyz', '/metrics']);
    const url = `${route}${pick(['', '/', '?', `?${encodeURIComponent(ascii(12))}`, `/${encodeURIComponent(ascii(6))}`, '%2e', '?token=x'])}`;
    const method = pick(['GET', 'GET', 'GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH']);
    const headers: Record<string, string> = {};
    if (rnd() < 0.7)
      headers.authorization = pick([
        `Bearer ${TOKEN}`,
        `bearer ${TOKEN}`,
        `Bearer ${TOKEN} ${TOKEN}`,
        `Bearer ${ascii(30)}`,
        ascii(40),
        'Bearer',
        `Bearer ${TOKEN}\t`,
      ]);
    if (rnd() < 0.3) headers['content-type'] = pick(['application/json', 'text/plain', ascii(8)]);
    const body = method === 'POST' || method === 'PUT' || method === 'PATCH' ? pick(['{}', ascii(100), '']) : undefined;
    const res = await httpRequest(base, method, url, headers, body);
    expect(res.status, `${method} ${url} ${JSON.stringify(headers)} -> ${res.body}`).toBeLessThan(500);
    if (method === 'HEAD') continue;
    if (res.type.startsWith('text/plain')) expect([res.status, url.startsWith('/metrics')]).toEqual([200, true]);
    else expect(() => JSON.parse(res.body), `${method} ${url} -> ${res.body}`).not.toThrow();
    if (res.status >= 400) expect(typeof JSON.parse(res.body).error).toBe('string');
  }
  expect((await get(base, '/livez')).status).toBe(200);
}

/** The `node -e` health checks as docker-compose.yml and the Dockerfile give them, run as Docker would, with PORT set. */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const compose = parse(readFileSync(path.join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, { healthcheck: { test: string[] } }>;
};
const composeProbe = (role: string) => compose.services[role]!.healthcheck.test[3]!;
const DOCKERFILE_PROBE = JSON.parse(/^HEALTHCHECK [^\n]*\\\n\s*CMD (\[.*\])$/m.exec(readFileSync(path.join(root, 'Dockerfile'), 'utf8'))![1]!)[2] as string;
const probeExit = (script: string, port: string) =>
  new Promise<number | null>((resolve) =>
    execFile(process.execPath, ['-e', script], { env: { ...process.env, PORT: port } }, (err) => resolve(err ? (err.code as number) : 0)),
  );

async function eventually<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 300; i++) {
    const v = await probe();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`gave up waiting for ${what}`);
}

describe('npm start: every role in one process, the operator routes on its one port', () => {
  let svc: Awaited<ReturnType<typeof startRole>>;
  beforeAll(async () => {
    svc = await startRole('all');
  });
  afterAll(async () => svc?.running.stop());

  it('/livez and /readyz answer, readiness naming each dependency it asked', async () => {
    const live = await get(svc.base, '/livez');
    expect([live.status, JSON.parse(live.body)]).toEqual([200, { status: 'live' }]);
    const ready = await get(svc.base, '/readyz');
    expect(ready.status).toBe(200);
    expect(JSON.parse(ready.body)).toEqual({ status: 'ready', checks: { relational: 'ok', analytical: 'ok', bus: 'ok', rateLimits: 'ok' } });
  });

  it('/metrics without the token, or with a wrong one, is the 404 of a route that does not exist', async () => {
    const unknown = await get(svc.base, '/nothing-here');
    expect(unknown.status).toBe(404);
    for (const headers of [{}, { authorization: 'Bearer not-the-metrics-token' }, { authorization: TOKEN }, { authorization: `Basic ${TOKEN}` }]) {
      const res = await get(svc.base, '/metrics', headers);
      expect({ status: res.status, type: res.type, body: res.body }).toEqual({
        status: unknown.status,
        type: unknown.type,
        body: unknown.body.replace('/nothing-here', '/metrics'),
      });
    }
    expect(await scrape(svc.base)).toContain('# TYPE service_ingest_refusals_total counter');
  });

  it('the counters move: a refused batch, an accepted one, the pipeline that stored it', async () => {
    const project = await createIngestProject(svc.running.platform);
    const batch = JSON.stringify({ batch: [{ name: 'TypeError', message: 'x is undefined', stack: 'TypeError: x\n    at load (src/app.ts:3:9)' }] });
    const post = (key: string) => httpRequest(svc.base, 'POST', '/v1/errors/i', { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, batch);
    // The edge knows the new key once its settings refresh.
    await eventually('the new key accepted', async () => ((await post(project.ingestKey)).status === 202 ? true : undefined));

    const before = await scrape(svc.base);
    const refused = (text: string) => metricValue(text, 'service_ingest_refusals_total', { family: 'errors', reason: 'unauthorized' }) ?? 0;
    const accepted = (text: string) => metricValue(text, 'service_ingest_accepted_total', { family: 'errors', unit: 'events' }) ?? 0;
    const stored = (text: string) => metricValue(text, 'service_pipeline_events_total', { pipeline: 'errors', outcome: 'accepted' }) ?? 0;

    expect((await post(`cak_live_${'0'.repeat(43)}`)).status).toBe(401);
    let after = await scrape(svc.base);
    expect(refused(after)).toBe(refused(before) + 1);
    expect(accepted(after)).toBe(accepted(before));

    expect((await post(project.ingestKey)).status).toBe(202);
    // The edge answers once the bus's log holds the batch; the pipeline counts it behind.
    after = await eventually('the pipeline to count the event', async () => {
      const text = await scrape(svc.base);
      return stored(text) > stored(before) ? text : undefined;
    });
    expect(accepted(after)).toBe(accepted(before) + 1);
    expect(refused(after)).toBe(refused(before) + 1);
    expect(metricValue(after, 'service_ingest_answer_seconds_count', { route: '/v1/errors/i', code: '202' })).toBeGreaterThanOrEqual(2);
    expect(metricValue(after, 'service_ingest_answer_seconds_count', { route: '/v1/errors/i', code: '401' })).toBeGreaterThanOrEqual(1);
    expect(metricValue(after, 'service_bus_lag_messages', { topic: 'errors.events.v1' })).toBe(0);
    // The data directory's disk watch (npm start writes under DATA_DIR): plenty of room in a test's temp dir.
    expect(metricValue(after, 'service_data_dir_low', {})).toBe(0);
    expect(metricValue(after, 'service_data_dir_free_bytes', {})).toBeGreaterThan(0);
    expect(after).toMatch(/^nodejs_eventloop_lag_seconds \S+$/m);
  });

  it("times the API's answers by route pattern, never by the URL's own ids", async () => {
    const slug = `never-a-label-${Date.now()}`;
    expect((await get(svc.base, `/v1/projects/${slug}/errors`)).status).toBe(401);
    expect((await get(svc.base, '/v1/')).status).toBe(200);
    const text = await scrape(svc.base);
    expect(metricValue(text, 'service_api_request_seconds_count', { method: 'GET', route: '/v1/projects/:slug/errors', code: '401' })).toBeGreaterThanOrEqual(
      1,
    );
    expect(metricValue(text, 'service_api_request_seconds_count', { method: 'GET', route: '/v1/', code: '200' })).toBeGreaterThanOrEqual(1);
    expect(text).not.toContain(slug);
  });

  it('/readyz turns 503 naming the store that fails, and 200 again once it answers', async () => {
    svc.db.down = true;
    try {
      const refused = await eventually('readyz to see the database gone', async () => {
        const res = await get(svc.base, '/readyz');
        return res.status === 503 ? res : undefined;
      });
      const body = JSON.parse(refused.body);
      expect(body).toMatchObject({ error: 'unavailable', checks: { relational: 'failed', analytical: 'ok', bus: 'ok', rateLimits: 'ok' } });
      expect(body.message).toContain('relational');
      expect(refused.type).toBe('application/json');
      // Alive all the same: nothing to restart.
      expect((await get(svc.base, '/livez')).status).toBe(200);
    } finally {
      svc.db.down = false;
    }
    await eventually('readyz to see the database back', async () => ((await get(svc.base, '/readyz')).status === 200 ? true : undefined));
  });

  it('the operator routes under random input: never a 5xx, JSON errors, and the port keeps serving', () => fuzzOpsRoutes(svc.base, 36));
});

describe.each([
  ['ingest', ['relational', 'bus', 'rateLimits'], 'service_ingest_refusals_total'],
  ['processor', ['relational', 'analytical', 'bus'], 'service_pipeline_events_total'],
  ['builder', ['relational', 'analytical', 'bus'], 'service_builds_total'],
  ['api', ['relational', 'analytical', 'bus', 'rateLimits'], 'service_api_request_seconds'],
] as const)('the %s role alone: the operator routes on its own port', (role, dependencies, own) => {
  let svc: Awaited<ReturnType<typeof startRole>>;
  beforeAll(async () => {
    // Addresses a role alone must be given; every port is a test stand-in, so none is dialled.
    svc = await startRole(role, {
      DATABASE_URL: 'postgres://unused@127.0.0.1:1/unused',
      CLICKHOUSE_URL: 'http://127.0.0.1:1/unused',
      KAFKA_BROKERS: '127.0.0.1:1',
      REDIS_URL: 'redis://127.0.0.1:1',
      SMTP_URL: 'smtp://127.0.0.1:1',
      PUBLIC_BASE_URL: 'http://localhost:8080',
    });
  });
  afterAll(async () => svc?.running.stop());

  it('answers /livez, /readyz for the dependencies it uses, and /metrics only with the token', async () => {
    expect((await get(svc.base, '/livez')).status).toBe(200);
    const ready = await get(svc.base, '/readyz');
    expect([ready.status, Object.keys(JSON.parse(ready.body).checks)]).toEqual([200, [...dependencies]]);
    expect((await get(svc.base, '/v1/')).status).toBe(role === 'api' ? 200 : 404);
    const notFound = await get(svc.base, '/no-such-route');
    const closed = await get(svc.base, '/metrics', { authorization: 'Bearer wrong-token-wrong-token' });
    expect([closed.status, closed.body]).toEqual([404, notFound.body.replace('/no-such-route', '/metrics')]);
    const text = await scrape(svc.base);
    expect(text).toContain(own);
    expect(text).toContain('nodejs_eventloop_lag_seconds');
    if (role === 'processor' || role === 'builder') expect(text).toContain('service_bus_lag_messages');
  });

  it('its routes under random input: never a 5xx, JSON errors, still serving', () => fuzzOpsRoutes(svc.base, role.length));

  it('a request that is not HTTP does not stop the port: the small server of the processor and builder answers a JSON 400', async () => {
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(Number(new URL(svc.base).port), '127.0.0.1', () => socket.write('NOT HTTP AT ALL\r\n\r\n'));
      let text = '';
      socket.on('data', (c) => (text += c));
      socket.on('end', () => resolve(text));
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    // Fastify (api) and uWebSockets.js (ingest) answer malformed requests their own way; the node:http server is ours.
    if (role === 'processor' || role === 'builder') {
      expect(answer).toMatch(/^HTTP\/1\.1 400 /);
      expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)).error).toBe('invalid_request');
    }
    expect((await get(svc.base, '/livez')).status).toBe(200);
  });

  it("/readyz is 503 while the database is away; the compose file's probe says unhealthy, the Dockerfile's (liveness) healthy", async () => {
    const port = new URL(svc.base).port;
    expect(await probeExit(composeProbe(role), port)).toBe(0);
    expect(await probeExit(DOCKERFILE_PROBE, port)).toBe(0);
    svc.db.down = true;
    try {
      const res = await eventually('readyz 503', async () => {
        const r = await get(svc.base, '/readyz');
        return r.status === 503 ? r : undefined;
      });
      expect(JSON.parse(res.body).checks.relational).toBe('failed');
      expect(await probeExit(composeProbe(role), port)).toBe(1);
      expect(await probeExit(DOCKERFILE_PROBE, port)).toBe(0);
    } finally {
      svc.db.down = false;
    }
  });
});
