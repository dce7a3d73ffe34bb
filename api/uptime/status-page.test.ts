import http from 'node:http';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../platform/clock.ts';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn } from '../../test/support/accounts.ts';
import { createIngestProject } from '../../test/support/ingest-fixtures.ts';
import { steerableGuard } from '../../test/support/outbound-guard.ts';
import { startTestEdge } from '../../test/support/test-edge.ts';

/**
 * The status page people read (issue 43 "The page", "Subscribing"), over HTTP: the HTML page, the badge, the Atom
 * feed, the response times the rollups now hold, a custom domain that serves the page, and a tenant playing the
 * attacker with markup in its monitors' names.
 */
const HOUR = 3_600_000;
const clock = new ManualClock(Date.now());
const EVIL = `<script>alert("x")</script><img src=x onerror=alert(1)> & 'quotes'`;
let t: Awaited<ReturnType<typeof buildTestApi>>;
let base: string;
let slug: string;
let projectId: string;
let owner: Awaited<ReturnType<typeof signUpAndSignIn>>;
const ids: Record<string, string> = {};

const get = (path: string, headers: Record<string, string> = {}) => fetch(`${base}${path}`, { headers, signal: AbortSignal.timeout(10_000) });

beforeAll(async () => {
  const outbound = steerableGuard({ unknownNames: 'fail' });
  outbound.table['status-page.example'] = ['93.184.215.14']; // paused at creation: checked at save, never dialled
  t = await buildTestApi({ overrides: { outbound: outbound.guard, clock } });
  owner = await signUpAndSignIn(t.app, t.platform);
  slug = (await createProject(t.app, owner.cookie)).slug;
  projectId = (await t.platform.db.query<{ id: string }>('SELECT id FROM projects WHERE slug = $1', [slug])).rows[0]!.id;
  for (const [key, name] of [
    ['web', 'Website'],
    ['evil', EVIL],
    ['hidden', 'Private admin'],
  ] as const) {
    const res = await t.app.inject({
      method: 'POST',
      url: `/v1/projects/${slug}/uptime`,
      headers: sessionHeaders(owner.cookie),
      payload: { name, url: `https://status-page.example/${key}`, public: key !== 'hidden', paused: true },
    });
    expect(res.statusCode, res.body).toBe(201);
    ids[key] = res.json().monitor.id;
    clock.advance(1_000); // the page lists monitors in the order they were made
  }
  // What the monitor role would have written: states, hourly rollups with response times, an incident.
  await t.platform.db.query(`UPDATE uptime_monitors SET paused = false, state = 'up' WHERE project_id = $1`, [projectId]);
  await t.platform.db.query(`UPDATE uptime_monitors SET state = 'down' WHERE id = $1`, [ids.evil]);
  const hour = Math.floor(t.platform.clock.now() / HOUR) * HOUR;
  for (let h = 0; h < 24; h++) {
    await t.platform.db.query('INSERT INTO uptime_hourly (monitor_id, hour, checks, failures, ms_sum, ms_checks) VALUES ($1, $2, 60, 0, $3, 60)', [
      ids.web,
      new Date(hour - h * HOUR),
      60 * (100 + h),
    ]);
  }
  await t.platform.db.query('INSERT INTO uptime_hourly (monitor_id, hour, checks, failures, ms_sum, ms_checks) VALUES ($1, $2, 10, 10, 0, 0)', [
    ids.evil,
    new Date(hour - 3 * 24 * HOUR),
  ]);
  await t.platform.db.query(
    `INSERT INTO uptime_incidents (id, monitor_id, project_id, started_at, cause_error, cause_status) VALUES ('inc_evil', $1, $2, $3, 'status', 503)`,
    [ids.evil, projectId, new Date(hour - 2 * HOUR)],
  );
  base = await t.app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await t?.close();
});

describe('the status page', () => {
  it('is HTML without script, small, with landmarks, headings and text alternatives, and escapes what the tenant wrote', async () => {
    const res = await get(`/status/${slug}`);
    const html = await res.text();
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('content-security-policy')).toMatch(/default-src 'none'; style-src 'sha256-[^']+'/);
    expect(res.headers.get('content-security-policy')).not.toContain('script-src');
    expect(Buffer.byteLength(html)).toBeLessThanOrEqual(30 * 1024);
    // no script at all: the tenant's markup is text
    expect(html).not.toMatch(/<script/i);
    expect(html).not.toMatch(/<img/i);
    expect(html).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt; &amp; &#39;quotes&#39;');
    expect(html).not.toContain('Private admin');
    expect(html).toMatch(/<html lang="en">/);
    for (const landmark of ['<header>', '<main>', '<footer']) expect(html).toContain(landmark);
    expect(html).toContain(`<h1>${slug} status</h1>`);
    expect(html).toContain('Partial outage');
    // the 90-day bar and the 24-hour chart, each with a text alternative
    // (the 24 hours of rollups span one or two UTC days)
    expect(html).toMatch(/<svg id="bar-0" role="img" aria-label="Daily uptime over the last 90 days: ([12]) days with checks, \1 fully up\."/);
    expect(html).toContain('aria-label="Response time over the last 24 hours (hourly averages): average 112 ms, fastest hour 100 ms, slowest hour 123 ms."');
    expect(html).toMatch(/<svg id="bar-1" role="img" aria-label="[^"]*lowest 0 % on \d{4}-\d\d-\d\d/);
    // the automatic incident, under current incidents
    expect(html).toMatch(/<h2 id="current">Current incidents<\/h2>.*is down \(an unexpected status\)/s);
    // the subscribe form posts without script
    expect(html).toContain(`<form method="post" action="/v1/status/${slug}/subscribers">`);
    expect(html).toMatch(/<label for="email">[^<]+<\/label><input id="email" name="email" type="email" required/);
    expect(html).toContain(`href="/v1/status/${slug}/feed.atom"`);
  });

  it('reads the response times of the rollups: hourly averages over 24 hours in the JSON', async () => {
    const json = await (await get(`/v1/status/${slug}`)).json();
    const web = json.monitors.find((m: { id: string }) => m.id === ids.web);
    expect(web.responseTimes24h).toHaveLength(24);
    expect(web.responseTimes24h.at(-1).ms).toBe(100);
    expect(web.responseTimes24h[0].ms).toBe(123);
    expect(json.monitors.find((m: { id: string }) => m.id === ids.evil).responseTimes24h).toEqual([]);
  });

  it('is cached as the JSON is, with an ETag of its own: If-None-Match answers 304; an unknown slug 404', async () => {
    const [page, json] = await Promise.all([get(`/status/${slug}`), get(`/v1/status/${slug}`)]);
    expect(page.headers.get('cache-control')).toBe(json.headers.get('cache-control'));
    const etag = page.headers.get('etag')!;
    expect(etag).toMatch(/^"[\w-]{27}"$/);
    expect(etag).not.toBe(json.headers.get('etag'));
    const again = await get(`/status/${slug}`, { 'if-none-match': etag });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');
    expect((await get(`/status/${slug.toUpperCase()}`)).headers.get('etag')).toBe(etag);
    const unknown = await get(`/status/no-such-${slug}`);
    expect(unknown.status).toBe(404);
    expect((await unknown.json()).error).toBe('not_found');
    // A browser's navigation gets the 404 as a page, the name it typed escaped (never markup), nothing cached.
    const typed = `no-such-<b>${slug}</b>`;
    const browser = await get(`/status/${encodeURIComponent(typed)}`, { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' });
    expect(browser.status).toBe(404);
    expect(browser.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(browser.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(browser.headers.get('cache-control')).toBe('no-store');
    const html = await browser.text();
    expect(html).toContain('<h1>No status page here</h1>');
    expect(html).toContain(`<code>no-such-&lt;b&gt;${slug}&lt;/b&gt;</code>`);
    expect(html).not.toContain('<b>');
  });

  it("computes a slug's status once when its answer expires, however many ask at once; the others get the answer it replaces", async () => {
    const before = await (await get(`/v1/status/${slug}`)).json();
    clock.advance(6_000); // past LIMITS.uptime.statusCacheMs
    const db = t.platform.db;
    const query = db.query.bind(db);
    let computations = 0;
    db.query = ((sql: string, params?: unknown[]) => {
      if (sql.includes('FROM uptime_hourly')) computations++;
      return query(sql, params);
    }) as typeof db.query;
    try {
      const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => get(i % 2 ? `/status/${slug}` : `/v1/status/${slug}`)));
      expect(answers.map((a) => a.status)).toEqual(Array(12).fill(200));
      expect(computations).toBe(1);
      // the first asker waited for the new answer
      expect((await answers[0]!.json()).updatedAt).not.toBe(before.updatedAt);
    } finally {
      db.query = query;
    }
  });

  it('counts against the caller IP status budget, as the JSON does', async () => {
    const from = (ip: string, url: string) => t.app.inject({ url, remoteAddress: ip });
    for (let i = 0; i < 300; i++) expect((await from('198.51.100.20', `/status/${slug}`)).statusCode).toBe(200);
    for (let i = 0; i < 300; i++) expect((await from('198.51.100.20', `/v1/status/${slug}/badge.svg`)).statusCode).toBe(200);
    const over = await from('198.51.100.20', `/status/${slug}`);
    expect(over.statusCode).toBe(429);
    expect(over.json().error).toBe('rate_limited');
    expect((await from('198.51.100.20', `/v1/status/${slug}/feed.atom`)).statusCode).toBe(429);
    expect((await from('198.51.100.21', `/status/${slug}`)).statusCode).toBe(200);
  });
});

describe('what people write, through the incidents routes', () => {
  it('shows a written incident with its updates and scheduled maintenance on the page and in the feed, escaped', async () => {
    const write = (url: string, payload: object) => t.app.inject({ method: 'POST', url, headers: sessionHeaders(owner.cookie), payload });
    const created = await write(`/v1/projects/${slug}/uptime/incidents`, {
      title: 'Checkout <script>alert(3)</script> fails',
      impact: 'major',
      monitorIds: [ids.web],
      message: 'Looking into <b>it</b>.',
    });
    expect(created.statusCode, created.body).toBe(201);
    const incidentId = created.json().incident.id;
    const update = await write(`/v1/projects/${slug}/uptime/incidents/${incidentId}/updates`, { status: 'identified', message: 'Found & fixing.' });
    expect(update.statusCode, update.body).toBeLessThan(300);
    const maintenance = await write(`/v1/projects/${slug}/uptime/maintenance`, {
      title: 'Database <upgrade>',
      message: 'Writes pause.',
      monitorIds: [ids.web],
      startsAt: new Date(clock.now() + HOUR).toISOString(),
      endsAt: new Date(clock.now() + 2 * HOUR).toISOString(),
    });
    expect(maintenance.statusCode, maintenance.body).toBe(201);
    clock.advance(6_000); // past the cached answer
    const html = await (await get(`/status/${slug}`)).text();
    expect(html).not.toMatch(/<script|<b>|<upgrade>/);
    expect(html).toMatch(/<h2 id="maintenance">Maintenance<\/h2>.*Database &lt;upgrade&gt;.*Scheduled/s);
    expect(html).toMatch(/<h2 id="current">Current incidents<\/h2>.*Checkout &lt;script&gt;alert\(3\)&lt;\/script&gt; fails.*Identified/s);
    expect(html.indexOf('Found &amp; fixing.')).toBeLessThan(html.indexOf('Looking into &lt;b&gt;it&lt;/b&gt;.')); // newest first
    const xml = await (await get(`/v1/status/${slug}/feed.atom`)).text();
    expect(XMLValidator.validate(xml)).toBe(true);
    const feed = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '', htmlEntities: true, isArray: (n) => n === 'entry' }).parse(xml).feed;
    const titles = feed.entry.map((e: { title: { '#text': string } }) => e.title['#text']);
    expect(titles).toEqual(expect.arrayContaining(['Checkout <script>alert(3)</script> fails', '[Maintenance, scheduled] Database <upgrade>']));
    const written = feed.entry.find((e: { id: string }) => e.id.endsWith(`#incident-${incidentId}`));
    expect(written.content['#text']).toMatch(/Identified · .*\nFound & fixing\.[\s\S]*Investigating · .*\nLooking into <b>it<\/b>\./);
  });
});

describe('the badge', () => {
  const parse = (svg: string) => {
    expect(XMLValidator.validate(svg)).toBe(true);
    return new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '' }).parse(svg) as { svg: Record<string, unknown> & { title: string } };
  };

  it('shows the overall state as SVG, cacheable, with 304', async () => {
    const res = await get(`/v1/status/${slug}/badge.svg`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/svg+xml; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('public, max-age=5');
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    const svg = parse(await res.text()).svg;
    expect(svg.xmlns).toBe('http://www.w3.org/2000/svg');
    expect(svg.role).toBe('img');
    expect(svg.title).toBe('status: partial outage');
    expect((await get(`/v1/status/${slug}/badge.svg`, { 'if-none-match': res.headers.get('etag')! })).status).toBe(304);
  });

  it("shows one public monitor's uptime over a window; an unknown or private monitor is 404, a bad window 400", async () => {
    const day = parse(await (await get(`/v1/status/${slug}/badge.svg?monitor=${ids.web}&window=24h`)).text()).svg;
    expect(day.title).toBe('uptime 24h: 100 %');
    const quarter = parse(await (await get(`/v1/status/${slug}/badge.svg?monitor=${ids.evil}&window=90d`)).text()).svg;
    expect(quarter.title).toBe('uptime 90d: 0 %');
    const hidden = await get(`/v1/status/${slug}/badge.svg?monitor=${ids.hidden}`);
    expect(hidden.status).toBe(404);
    expect((await hidden.json()).error).toBe('not_found');
    const bad = await get(`/v1/status/${slug}/badge.svg?window=1y`);
    expect(bad.status).toBe(400);
    expect((await bad.json()).error).toBe('invalid_request');
  });
});

describe('the Atom feed', () => {
  it('is well-formed Atom: feed id, title, updated; entries with id, title, updated; the tenant text escaped', async () => {
    const res = await get(`/v1/status/${slug}/feed.atom`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/atom+xml; charset=utf-8');
    const xml = await res.text();
    expect(XMLValidator.validate(xml)).toBe(true);
    expect(xml).not.toContain('<script');
    const doc = new XMLParser({
      ignoreAttributes: false,
      attributeNamePrefix: '',
      htmlEntities: true,
      isArray: (name) => name === 'entry' || name === 'link',
    }).parse(xml);
    const feed = doc.feed;
    expect(feed.xmlns).toBe('http://www.w3.org/2005/Atom');
    expect(feed.id).toMatch(new RegExp(`^https?://[^/]+/status/${slug}$`));
    expect(feed.title).toBe(`${slug} status`);
    expect(Date.parse(feed.updated)).toBeGreaterThan(0);
    expect(feed.author.name).toBe(slug);
    expect(feed.link.map((l: { rel: string }) => l.rel).sort()).toEqual(['alternate', 'self']);
    const entry = feed.entry.find((e: { id: string }) => e.id.includes(`#incident-${ids.evil}-`));
    // an automatic incident's id: its monitor and start (the JSON carries no incident id)
    expect(entry.id).toMatch(new RegExp(`^${feed.id}#incident-${ids.evil}-\\d+$`));
    expect(entry.title['#text']).toBe(`${EVIL} is down (an unexpected status)`);
    expect(Date.parse(entry.updated)).toBeGreaterThan(0);
    expect((await get(`/v1/status/${slug}/feed.atom`, { 'if-none-match': res.headers.get('etag')! })).status).toBe(304);
  });
});

/** A request over real HTTP to 127.0.0.1 with a Host of our choosing (fetch may not set one). */
function hostGet(
  host: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${path}`, { headers: { ...headers, host } }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.setTimeout(10_000, () => req.destroy(new Error(`no answer: ${path}`)));
    req.on('error', reject);
    req.end();
  });
}

describe('a custom domain for the status page', () => {
  it('serves the page at / once verified and marked for status; its status routes answer, nothing else', async () => {
    const add = await t.app.inject({
      method: 'POST',
      url: `/v1/projects/${slug}/domains`,
      headers: sessionHeaders(owner.cookie),
      payload: { domain: 'status.example.com', serves: 'status' },
    });
    expect(add.statusCode, add.body).toBe(201);
    expect(add.json().domain).toMatchObject({ domain: 'status.example.com', serves: 'status', verified: false });
    const on = (path: string, headers: Record<string, string> = {}) => hostGet('status.example.com', path, headers);
    // Unverified: no page (the API answers as for any Host that is no site).
    expect((await on('/')).body).not.toContain(`${slug} status`);
    // The TXT proof is the domains family's (its own tests); here the row is marked verified as verify does.
    await t.platform.db.query(`UPDATE project_domains SET verified_at = now() WHERE domain = 'status.example.com'`);
    // (a Host found no site is remembered as such for SITE_CACHE_MS)
    await expect.poll(async () => (await on('/')).headers['content-security-policy'], { timeout: 10_000 }).toMatch(/style-src 'sha256-/);
    const page = await on('/');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.body).toContain(`<h1>${slug} status</h1>`);
    expect(page.body).toContain(`action="/v1/status/${slug}/subscribers"`);
    expect((await on('/', { 'if-none-match': String(page.headers.etag) })).status).toBe(304);
    expect((await on(`/v1/status/${slug}/feed.atom`)).status).toBe(200);
    expect((await on(`/v1/status/${slug}`)).status).toBe(200);
    // nothing else of the service answers on the tenant's domain
    for (const path of ['/v1/projects', '/anything', `/status/${slug}`, '/v1/status/other-slug']) {
      const other = await on(path);
      expect(other.status, path).toBe(404);
      expect(JSON.parse(other.body).error).toBe('not_found');
    }
    const list = await t.app.inject({ url: `/v1/projects/${slug}/domains`, headers: sessionHeaders(owner.cookie) });
    expect(list.json().domains).toEqual([expect.objectContaining({ domain: 'status.example.com', serves: 'status', verified: true })]);
  });
});

describe('a custom status domain at the edge (the single process front door)', () => {
  it('relays the domain to the API instead of serving files', async () => {
    const edge = await startTestEdge({}, { sites: true });
    try {
      const p = await createIngestProject(edge.platform);
      await edge.platform.db.query(
        `INSERT INTO project_domains (project_id, domain, token, serves, verified_at) VALUES ($1, 'status.edge.example', 't', $2, now()), ($1, 'site.edge.example', 't2', 'site', now())`,
        [p.projectId, 'status'],
      );
      const at = (host: string) =>
        new Promise<{ status: number; body: string }>((resolve, reject) => {
          const req = http.request(`${edge.base}/`, { headers: { host } }, (res) => {
            let body = '';
            res.on('data', (c) => (body += c));
            res.on('end', () => resolve({ status: res.statusCode!, body }));
          });
          req.on('error', reject);
          req.end();
        });
      // the test edge's API stand-in answers what is relayed
      const relayed = await at('status.edge.example');
      expect(relayed.body).toContain('the API is not part of this test');
      // a site domain without a live deploy is no site: relayed too; the status domain never reaches the files
      expect((await at('site.edge.example')).body).toContain('the API is not part of this test');
    } finally {
      await edge.close();
    }
  });
});
