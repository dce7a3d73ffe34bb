import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import { newId } from '../../platform/tokens.ts';
import type { Platform } from '../../platform/platform.ts';
import { eventually, http, newProject, postBatch, signedInUser, type E2eProject, type ServiceUrls } from './support/http-client.ts';

/**
 * Error tracking through the whole path: HTTP in (the uWS edge), the bus, the processor, Postgres
 * and the analytical store, HTTP out (the API). Run twice by error-tracking.e2e.test.ts: on the
 * embedded defaults (one process, one port) and on Postgres + Kafka + ClickHouse + Redis + SMTP
 * (three roles started separately). Every test makes its own project and waits on that project's
 * rows only, so runs never depend on each other.
 */
export interface E2eService extends ServiceUrls {
  /** A platform on the same stores (to insert a deploys row and to read ClickHouse). */
  platform: Platform;
  /** Every alert mail sent so far. */
  mails(): Promise<Array<{ to: string[]; subject: string; text: string }>>;
}

const PROD = 'app.example.com';

let seq = 0;
function ev(over: Record<string, unknown> = {}) {
  return {
    name: 'TypeError',
    message: "Cannot read properties of undefined (reading 'id')",
    stack: `TypeError: Cannot read properties of undefined (reading 'id')\n    at loadUser (https://${PROD}/assets/users.js:12:5)\n    at dispatch (https://${PROD}/node_modules/react/index.js:1:1)`,
    path: '/account',
    runtime: 'browser',
    timestamp: new Date(Date.UTC(2026, 10, 21, 12, 0, 0) + seq++).toISOString(),
    ...over,
  };
}

/**
 * A new key reaches the edge with its next settings refresh: until then 401, then an empty batch is
 * a 400 (key known, body invalid), so nothing is stored while waiting.
 */
export async function edgeKnows(urls: ServiceUrls, ingestKey: string): Promise<void> {
  await eventually('the edge knows the new ingest key', async () => ((await postBatch(urls, ingestKey, [])).status === 400 ? true : undefined), 20_000, 100);
}

export function defineErrorTrackingScenarios(service: () => E2eService): void {
  let cookie: string | undefined;
  const fresh = async (opts: Parameters<typeof newProject>[2] = {}): Promise<E2eProject> => {
    const s = service();
    cookie ??= (await signedInUser(s.platform, s)).cookie;
    const p = await newProject(s, cookie, opts);
    await edgeKnows(s, p.ingestKey);
    return p;
  };
  const api = (p: E2eProject, path: string, method = 'GET') =>
    http(`${service().apiUrl}/v1/projects/${p.slug}${path}`, { method, headers: { authorization: `Bearer ${p.apiKey}` } });
  const patch = (p: E2eProject, path: string, body: unknown) =>
    http(`${service().apiUrl}/v1/projects/${p.slug}${path}`, { method: 'PATCH', headers: { authorization: `Bearer ${p.apiKey}` }, body });

  /** The project's issues (every status), once their counts add up to `total`. */
  async function issuesOnce(p: E2eProject, total: number) {
    return eventually(`${total} occurrence(s) of ${p.slug} in the API`, async () => {
      const all = [];
      for (const status of ['unresolved', 'resolved', 'ignored']) {
        const r = await api(p, `/errors?status=${status}&limit=100`);
        expect(r.status).toBe(200);
        all.push(...r.json.data);
      }
      const sum = all.reduce((n: number, i: { count: number }) => n + i.count, 0);
      if (sum > total) throw new Error(`more occurrences than posted: ${sum} > ${total}`);
      return sum === total ? all : undefined;
    });
  }

  async function occurrences(p: E2eProject, final: boolean): Promise<number> {
    const rows = await service().platform.analytics.query<{ n: number | string }>(
      `SELECT count() AS n FROM error_occurrences ${final ? 'FINAL' : ''} WHERE project_id = {p:String}`,
      { p: p.id },
    );
    return Number(rows[0]?.n ?? 0);
  }

  it('a batch gets 202, messages differing only in numbers are one issue, and ClickHouse holds one row per accepted event', async () => {
    const p = await fresh();
    const res = await postBatch(service(), p.ingestKey, [
      ev({ name: 'TimeoutError', message: 'Request to /api/cart timed out after 3000 ms (attempt 1)' }),
      ev({ name: 'TimeoutError', message: 'Request to /api/cart timed out after 15000 ms (attempt 2)' }),
      ev({ name: 'TimeoutError', message: 'Request to /api/cart timed out after 250 ms (attempt 3)' }),
      ev({ message: "Cannot read properties of null (reading 'total')" }),
    ]);
    expect(res.status).toBe(202);
    expect(res.json).toEqual({ ingested: 4 });
    const issues = await issuesOnce(p, 4);
    expect(issues.map((i: { count: number; name: string }) => [i.name, i.count])).toEqual([
      ['TimeoutError', 3],
      ['TypeError', 1],
    ]);
    expect(issues[0].status).toBe('unresolved');
    await eventually('occurrence rows', async () => ((await occurrences(p, true)) === 4 ? true : undefined));
    expect(await occurrences(p, false)).toBe(4);
  });

  it('secrets in extra and stack come back [Filtered] in the issue detail', async () => {
    const p = await fresh();
    const stack = `Error: charge failed\n    at pay (https://${PROD}/assets/pay.js:3:9)\n    Authorization: Bearer abcdefghijklmnop0123`;
    const res = await postBatch(service(), p.ingestKey, [
      ev({ name: 'Error', message: 'charge failed', stack, extra: { password: 'hunter2-hunter2', note: 'retry with sk_live_51Habcdefghijklmnop', cart: 3 } }),
    ]);
    expect(res.status).toBe(202);
    const [issue] = await issuesOnce(p, 1);
    const detail = await api(p, `/errors/${issue.id}`);
    expect(detail.status).toBe(200);
    const text = JSON.stringify(detail.json);
    expect(text).not.toContain('hunter2');
    expect(text).not.toContain('sk_live_51Habcdefghijklmnop');
    expect(text).not.toContain('abcdefghijklmnop0123');
    const sample = detail.json.issue.samples[0];
    expect(sample.extra.password).toBe('[Filtered]');
    expect(sample.extra.note).toContain('[Filtered]');
    expect(sample.extra.cart).toBe(3);
    expect(detail.json.issue.stack).toContain('[Filtered]');
    expect(detail.json.issue.stack).toContain(`https://${PROD}/assets/pay.js:3:9`);
  });

  it('a resolved issue that occurs again is unresolved with regressionCount 1; an ignored one keeps counting and stays ignored', async () => {
    const p = await fresh();
    const a = ev({ name: 'RangeError', message: 'Invalid array length' });
    const b = ev({ name: 'SyntaxError', message: 'Unexpected token < in JSON at position 0' });
    expect((await postBatch(service(), p.ingestKey, [a, b])).status).toBe(202);
    const issues = await issuesOnce(p, 2);
    const ra = issues.find((i: { name: string }) => i.name === 'RangeError');
    const sb = issues.find((i: { name: string }) => i.name === 'SyntaxError');
    expect((await api(p, `/errors/${ra.id}/resolve`, 'POST')).json.issue.status).toBe('resolved');
    expect((await api(p, `/errors/${sb.id}/ignore`, 'POST')).json.issue.status).toBe('ignored');

    expect(
      (
        await postBatch(service(), p.ingestKey, [
          ev({ name: 'RangeError', message: 'Invalid array length' }),
          ev({ name: 'SyntaxError', message: 'Unexpected token < in JSON at position 17' }),
        ])
      ).status,
    ).toBe(202);
    await issuesOnce(p, 4);
    const again = (await api(p, `/errors/${ra.id}`)).json.issue;
    expect(again).toMatchObject({ status: 'unresolved', regressionCount: 1, count: 2 });
    const ignored = (await api(p, `/errors/${sb.id}`)).json.issue;
    expect(ignored).toMatchObject({ status: 'ignored', regressionCount: 0, count: 2 });
    expect((await api(p, '/errors?status=ignored')).json.data.map((i: { id: string }) => i.id)).toEqual([sb.id]);
  });

  it('stamps the environment from the Origin, then deployId, then gitSha, never from the body', async () => {
    const p = await fresh({ production: [PROD], preview: ['*.preview.example.com'] });
    const { platform } = service();
    const previewDeploy = newId('dep_');
    const sha = randomUUID().replace(/-/g, '').slice(0, 12);
    await platform.db.query(`INSERT INTO deploys (id, project_id, branch, git_sha, environment, status) VALUES ($1, $2, 'feature', NULL, 'preview', 'ready')`, [
      previewDeploy,
      p.id,
    ]);
    await platform.db.query(`INSERT INTO deploys (id, project_id, branch, git_sha, environment, status) VALUES ($1, $2, 'main', $3, 'production', 'ready')`, [
      newId('dep_'),
      p.id,
      sha,
    ]);

    const post = (message: string, over: Record<string, unknown>, headers: Record<string, string> = {}) =>
      postBatch(service(), p.ingestKey, [ev({ name: 'Error', message, stack: '', ...over })], headers);
    expect((await post('from production origin', { environment: 'preview' }, { origin: `https://${PROD}` })).status).toBe(202);
    expect((await post('from preview origin', {}, { origin: 'https://pr-9.preview.example.com' })).status).toBe(202);
    expect((await post('from deploy id', { deployId: previewDeploy, environment: 'production' })).status).toBe(202);
    expect((await post('from git sha', { gitSha: sha })).status).toBe(202);
    expect((await post('from the body only', { environment: 'production' })).status).toBe(202);

    const issues = await issuesOnce(p, 5);
    const envOf = (m: string) => Object.keys(issues.find((i: { message: string }) => i.message === m).envCounts);
    expect(envOf('from production origin')).toEqual(['production']);
    expect(envOf('from preview origin')).toEqual(['preview']);
    expect(envOf('from deploy id')).toEqual(['preview']);
    expect(envOf('from git sha')).toEqual(['production']);
    expect(envOf('from the body only')).toEqual(['unknown']);
    const prodOnly = await api(p, '/errors?environment=production');
    expect(prodOnly.json.data.map((i: { message: string }) => i.message).sort()).toEqual(['from git sha', 'from production origin']);
  });

  it('a paused project answers 204 and stores nothing', async () => {
    const p = await fresh();
    const other = await fresh();
    expect((await patch(p, '/errors/settings', { paused: true })).json).toEqual({ paused: true, ingestOrigins: [] });
    // The edge learns within a refresh: until then an empty batch is a 400; once paused, a 204
    // (the pause is checked before the body), so nothing can be stored while waiting.
    await eventually('the edge sees the pause', async () => ((await postBatch(service(), p.ingestKey, [])).status === 204 ? true : undefined), 20_000, 200);
    const res = await postBatch(service(), p.ingestKey, [ev({ message: 'dropped while paused' })]);
    expect(res.status).toBe(204);
    // A later batch of another project has gone the whole way; the paused one left no trace.
    expect((await postBatch(service(), other.ingestKey, [ev({ message: 'after the pause' })])).status).toBe(202);
    await issuesOnce(other, 1);
    expect((await api(p, '/errors')).json.data).toEqual([]);
    const ledger = await service().platform.db.query('SELECT 1 FROM error_events_consumed WHERE project_id = $1', [p.id]);
    expect(ledger.rows).toHaveLength(0);
    expect(await occurrences(p, false)).toBe(0);
  });

  it('a browser origin off the allowed list gets 403 origin_not_allowed; listed and server-to-server posts pass', async () => {
    const p = await fresh();
    expect((await patch(p, '/errors/settings', { ingestOrigins: ['shop.example.org'] })).status).toBe(200);
    const evil = { origin: 'https://evil.example.net' };
    // Origin is checked before the body: an empty batch turns from 400 to 403 once the edge knows.
    await eventually(
      'the edge sees the origin list',
      async () => ((await postBatch(service(), p.ingestKey, [], evil)).status === 403 ? true : undefined),
      20_000,
      200,
    );
    const refused = await postBatch(service(), p.ingestKey, [ev()], evil);
    expect(refused.status).toBe(403);
    expect(refused.json.error).toBe('origin_not_allowed');
    expect((await postBatch(service(), p.ingestKey, [ev()], { origin: 'https://shop.example.org' })).status).toBe(202);
    expect((await postBatch(service(), p.ingestKey, [ev()])).status).toBe(202);
    await issuesOnce(p, 2);
  });

  it('a new production issue emails the alert recipients', async () => {
    const p = await fresh();
    const to = `oncall-${randomUUID().slice(0, 8)}@example.test`;
    expect((await patch(p, '/error-alerts', { recipients: [to] })).json).toEqual({ enabled: true, recipients: [to], suppressed: [] });
    const stack = `TypeError: x\n    at renderCart (https://${PROD}/assets/cart.js:3:9)`;
    expect(
      (
        await postBatch(service(), p.ingestKey, [ev({ message: "Cannot read properties of undefined (reading 'items')", stack })], {
          origin: `https://${PROD}`,
        })
      ).status,
    ).toBe(202);
    const [issue] = await issuesOnce(p, 1);
    const mail = await eventually('the alert mail', async () => (await service().mails()).find((m) => m.to.includes(to)));
    expect(mail.subject).toContain('New issue in production');
    expect(mail.text).toContain(issue.id);
    expect(mail.text).toContain('renderCart');
  });

  it('an ingest key reads nothing back (403)', async () => {
    const p = await fresh();
    const r = await http(`${service().apiUrl}/v1/projects/${p.slug}/errors`, { headers: { authorization: `Bearer ${p.ingestKey}` } });
    expect(r.status).toBe(403);
    expect(typeof r.json.error).toBe('string');
    const withHeader = await http(`${service().apiUrl}/v1/projects/${p.slug}/errors`, { headers: { 'x-service-analytics-key': p.ingestKey } });
    expect([401, 403]).toContain(withHeader.status);
  });
}
