import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { PostHog } from 'posthog-node';
import { expect, it } from 'vitest';
import { edgeKnows } from './error-tracking.test-scenarios.ts';
import { eventually, http, newProject, signedInUser, type E2eProject } from './support/http-client.ts';
import { listOriginsAndSpendQuota, type AnalyticsService } from './analytics.test-scenarios.ts';

/**
 * PostHog's own Node SDK (posthog-node, unchanged) against the service: capture and identify through `/batch/`
 * (gzip, as the SDK sends by default), flags remote through `/flags/?v=2`, flags evaluated locally from
 * `/flags/definitions` with a key that has flags:read, and shutdown's flush; then the raw wire forms posthog-js and
 * older SDKs use. Asserts the rows stored (through the analytics API) and the answers. Run embedded and on Postgres +
 * Kafka + ClickHouse + Redis by analytics.e2e.test.ts; distributed, a load balancer sends `/flags/definitions` to the
 * API role and the rest of the host to the edge, which `routed` plays.
 */
export function definePostHogScenarios(service: () => AnalyticsService): void {
  let cookie: string | undefined;
  const fresh = async (): Promise<E2eProject> => {
    const s = service();
    cookie ??= (await signedInUser(s.platform, s)).cookie;
    const p = await newProject(s, cookie, { production: ['shop.example.com'] });
    await edgeKnows(s, p.ingestKey);
    return p;
  };
  const events = (p: E2eProject, n: number) =>
    eventually(
      `${n} analytics events of ${p.slug}`,
      async () => {
        const r = await http(`${service().apiUrl}/v1/projects/${p.slug}/analytics/events?from=${Date.now() - 86_400_000}&to=${Date.now() + 60_000}&limit=100`, {
          headers: { authorization: `Bearer ${p.apiKey}` },
        });
        return r.status === 200 && r.json.data.length >= n ? (r.json.data as Array<Record<string, any>>) : undefined;
      },
      30_000,
      200,
    );
  /** The one host PostHog's SDK is given; `/flags/definitions` goes to the API, as a load balancer would send it. */
  const routed: typeof fetch = (input, init) => {
    const url = new URL(String(input));
    const s = service();
    const target = url.pathname.startsWith('/flags/definitions') || url.pathname.startsWith('/api/feature_flag/') ? s.apiUrl : s.ingestUrl;
    return fetch(`${target}${url.pathname}${url.search}`, init);
  };
  const client = (p: E2eProject, extra: Record<string, unknown> = {}) =>
    new PostHog(p.ingestKey, { host: service().ingestUrl, flushAt: 50, flushInterval: 60_000, fetch: routed as never, ...extra });
  const createFlag = async (p: E2eProject, body: Record<string, unknown>) => {
    const r = await http(`${service().apiUrl}/v1/projects/${p.slug}/flags`, { method: 'POST', headers: { authorization: `Bearer ${p.apiKey}` }, body });
    expect(r.status).toBe(201);
  };
  const edgeHasFlag = (p: E2eProject, key: string) =>
    eventually(`the edge has ${key}`, async () => {
      const r = await http(`${service().ingestUrl}/v1/flags/i?distinctId=probe&keys=${key}`, { headers: { authorization: `Bearer ${p.ingestKey}` } });
      return r.status === 200 && r.json.flags[key].reason !== 'unknown_flag' ? true : undefined;
    });

  it('posthog-node: capture and identify are stored with their properties, uuid and time; the key is never a property; shutdown flushes', async () => {
    const p = await fresh();
    const ph = client(p);
    const at = new Date(Date.now() - 3_600_000);
    const uuid = randomUUID();
    ph.capture({ distinctId: 'user-1', event: 'signup', properties: { plan: 'pro', seats: 3 }, timestamp: at, uuid });
    ph.capture({
      distinctId: 'user-2',
      event: 'pageview',
      properties: { $current_url: 'https://shop.example.com/cart', $pathname: '/cart', $session_id: 'sess-1' },
    });
    ph.identify({ distinctId: 'user-1', properties: { email: 'one@example.com' } });
    await ph.shutdown();

    const rows = await events(p, 3);
    const byEvent = Object.fromEntries(rows.map((r) => [r.event, r]));
    expect(Object.keys(byEvent).sort()).toEqual(['$identify', 'pageview', 'signup']);
    expect(byEvent.signup).toMatchObject({ uuid, distinctId: 'user-1', environment: 'unknown' });
    expect(byEvent.signup!.properties).toMatchObject({ plan: 'pro', seats: '3', $lib: 'posthog-node' });
    expect(Math.abs(Date.parse(byEvent.signup!.timestamp) - at.getTime())).toBeLessThan(5_000);
    expect(byEvent.pageview).toMatchObject({ distinctId: 'user-2', path: '/cart', sessionId: 'sess-1' });
    expect(JSON.parse(byEvent.$identify!.properties.$set)).toEqual({ email: 'one@example.com' });
    for (const r of rows) expect(JSON.stringify(r.properties)).not.toContain(p.ingestKey);
  });

  it('posthog-node: flags remote (enabled, variant, payload, every flag) from the edge, as GET /v1/flags/i answers', async () => {
    const p = await fresh();
    await createFlag(p, {
      key: 'checkout',
      enabled: true,
      variants: [
        { key: 'blue', weight: 50 },
        { key: 'green', weight: 50 },
      ],
      payload: { color: 'any' },
      conditions: [{ properties: [{ key: 'plan', operator: 'eq', value: 'pro' }] }],
    });
    await createFlag(p, { key: 'off-flag', enabled: false });
    // The last one made: a settings refresh between the two would show the first alone.
    await edgeHasFlag(p, 'off-flag');
    const ph = client(p);
    const ours = await http(`${service().ingestUrl}/v1/flags/i?distinctId=user-1&properties=${encodeURIComponent('{"plan":"pro","distinct_id":"user-1"}')}`, {
      headers: { authorization: `Bearer ${p.ingestKey}` },
    });
    const variant = ours.json.flags.checkout.variant;
    expect(['blue', 'green']).toContain(variant);
    expect(await ph.getFeatureFlag('checkout', 'user-1', { personProperties: { plan: 'pro' } })).toBe(variant);
    expect(await ph.isFeatureEnabled('checkout', 'user-1', { personProperties: { plan: 'free' } })).toBe(false);
    expect(await ph.getFeatureFlagPayload('checkout', 'user-1', undefined, { personProperties: { plan: 'pro' } })).toEqual({ color: 'any' });
    expect(await ph.getAllFlags('user-1', { personProperties: { plan: 'pro' } })).toEqual({ checkout: variant, 'off-flag': false });
    await ph.shutdown();
  });

  it('posthog-node: local evaluation from /flags/definitions agrees with the edge for every caller, and asks the edge for flags it cannot evaluate', async () => {
    const p = await fresh();
    await createFlag(p, {
      key: 'half',
      enabled: true,
      rolloutPercentage: 50,
      variants: [
        { key: 'a', weight: 30 },
        { key: 'b', weight: 70 },
      ],
      payload: [1, 2],
    });
    await createFlag(p, {
      key: 'targeted',
      enabled: true,
      conditions: [
        { properties: [{ key: 'plan', operator: 'in', value: ['pro', 'Team'] }], variant: 'x' },
        { properties: [{ key: 'email', operator: 'contains', value: '@EXAMPLE.com' }], rolloutPercentage: 40 },
      ],
      variants: [
        { key: 'x', weight: 50 },
        { key: 'y', weight: 50 },
      ],
    });
    // A partial rollout before another condition: PostHog would try the next one, so it is the service's to answer.
    await createFlag(p, {
      key: 'remote-only',
      enabled: true,
      conditions: [{ properties: [{ key: 'plan', operator: 'exists' }], rolloutPercentage: 30 }, { properties: [] }],
    });
    await edgeHasFlag(p, 'remote-only');

    const remoteCalls: string[] = [];
    const counting: typeof fetch = (input, init) => {
      if (new URL(String(input)).pathname.startsWith('/flags/') && !String(input).includes('definitions')) remoteCalls.push(String(input));
      return routed(input, init);
    };
    const local = client(p, { personalApiKey: p.apiKey, fetch: counting });
    expect(await local.waitForLocalEvaluationReady(15_000)).toBe(true);
    const people = Array.from({ length: 60 }, (_, i) => ({
      id: `person-${i}`,
      props: { plan: ['pro', 'team', 'Team', 'free'][i % 4]!, email: i % 3 ? `p${i}@example.com` : `p${i}@other.org` },
    }));
    for (const person of people) {
      const q = `distinctId=${person.id}&keys=half,targeted&properties=${encodeURIComponent(JSON.stringify({ distinct_id: person.id, ...person.props }))}`;
      const edge = (await http(`${service().ingestUrl}/v1/flags/i?${q}`, { headers: { authorization: `Bearer ${p.ingestKey}` } })).json.flags;
      for (const key of ['half', 'targeted']) {
        const expected = edge[key].enabled ? (edge[key].variant ?? true) : false;
        const got = await local.getFeatureFlag(key, person.id, { personProperties: person.props, onlyEvaluateLocally: true, sendFeatureFlagEvents: false });
        expect({ person: person.id, key, got }).toEqual({ person: person.id, key, got: expected });
      }
    }
    expect(await local.getFeatureFlagPayload('half', 'person-1', 'a', { onlyEvaluateLocally: true })).toEqual([1, 2]);
    expect(remoteCalls).toEqual([]);

    // Not evaluable locally: absent when only local, answered by the edge otherwise.
    expect(await local.getFeatureFlag('remote-only', 'person-1', { personProperties: { plan: 'pro' }, onlyEvaluateLocally: true })).toBeUndefined();
    const edge = (
      await http(
        `${service().ingestUrl}/v1/flags/i?distinctId=person-1&keys=remote-only&properties=${encodeURIComponent('{"plan":"pro","distinct_id":"person-1"}')}`,
        {
          headers: { authorization: `Bearer ${p.ingestKey}` },
        },
      )
    ).json.flags['remote-only'];
    expect(await local.getFeatureFlag('remote-only', 'person-1', { personProperties: { plan: 'pro' }, sendFeatureFlagEvents: false })).toBe(edge.enabled);
    expect(remoteCalls.length).toBeGreaterThan(0);
    await local.shutdown();

    // The definitions need a key with flags:read, and the token must be this project's.
    const defs = (auth: string, token = p.ingestKey, more = '') =>
      http(`${service().apiUrl}/flags/definitions?token=${encodeURIComponent(token)}&send_cohorts${more}`, { headers: { authorization: auth } });
    expect((await defs('Bearer cx_live_nobody')).status).toBe(401);
    expect((await defs(`Bearer ${p.ingestKey}`)).status).toBe(403);
    expect((await defs(`Bearer ${p.apiKey}`, 'cak_live_not-this-project')).status).toBe(403);
    const ok = await defs(`Bearer ${p.apiKey}`);
    expect(ok.status).toBe(200);
    expect(ok.json.flags.map((f: { key: string }) => f.key).sort()).toEqual(['half', 'remote-only', 'targeted']);
    // PostHog's SDKs are many, one a language, and may add parameters of their own: one the route does not read
    // passes through rather than failing a server's flags.
    expect((await defs(`Bearer ${p.apiKey}`, p.ingestKey, '&sdk_own_parameter=1')).status).toBe(200);
  });

  it('the raw wire forms: posthog-js gzip as text/plain, the base64 data= form, one event, { api_key, batch }; PostHog answers and errors', async () => {
    const p = await fresh();
    const base = service().ingestUrl;
    const ev = (event: string, id: string) => ({
      event,
      properties: { distinct_id: id, token: p.ingestKey, $lib: 'web' },
      timestamp: new Date().toISOString(),
      uuid: randomUUID(),
    });
    const post = (path: string, body: Buffer | string, headers: Record<string, string>) =>
      fetch(`${base}${path}`, { method: 'POST', headers, body: typeof body === 'string' ? body : new Uint8Array(body) }).then(async (r) => ({
        status: r.status,
        json: await r.json().catch(() => null),
      }));

    const gz = await post('/i/v0/e/?compression=gzip-js&ver=1.449.2', gzipSync(JSON.stringify([ev('gz', 'w1')])), { 'content-type': 'text/plain' });
    expect(gz).toEqual({ status: 200, json: { status: 1 } });
    const form = `data=${encodeURIComponent(Buffer.from(JSON.stringify([ev('form', 'w2')])).toString('base64'))}`;
    expect((await post('/e/?compression=base64', form, { 'content-type': 'application/x-www-form-urlencoded' })).status).toBe(200);
    expect((await post('/capture/', JSON.stringify(ev('single', 'w3')), { 'content-type': 'application/json' })).status).toBe(200);
    // Scrubbing is the analytics pipeline's, whichever route the event took.
    const batch = {
      api_key: p.ingestKey,
      batch: [{ event: 'batched', distinct_id: 'w4', properties: { note: 'db at postgres://admin:hunter2secret@db.internal/app' } }],
      sent_at: new Date().toISOString(),
    };
    expect((await post('/batch', JSON.stringify(batch), { 'content-type': 'application/json' })).status).toBe(200);
    const rows = await events(p, 4);
    expect(rows.map((r) => r.event).sort()).toEqual(['batched', 'form', 'gz', 'single']);
    expect(JSON.stringify(rows)).not.toContain('hunter2secret');

    // PostHog's error fields beside ours, with the statuses its SDKs act on.
    const badKey = await post('/batch/', JSON.stringify({ ...batch, api_key: 'cak_live_nobody' }), { 'content-type': 'application/json' });
    expect(badKey.status).toBe(401);
    expect(badKey.json).toMatchObject({ error: 'unauthorized', type: 'authentication_error', code: 'invalid_api_key' });
    const notJson = await post('/e/', gzipSync('{"event":'), { 'content-type': 'text/plain' });
    expect(notJson.status).toBe(400);
    expect(notJson.json).toMatchObject({ error: 'invalid_request', type: 'validation_error' });
    const tooMany = await post('/batch/', JSON.stringify({ ...batch, batch: Array.from({ length: 101 }, () => batch.batch[0]) }), {
      'content-type': 'application/json',
    });
    expect(tooMany.status).toBe(413);
    // The origin list and the monthly quota are the project's, as on our own route.
    await listOriginsAndSpendQuota(service().platform, p.id);
    const quota = await eventually(
      'the edge sees the quota',
      async () => {
        const r = await post('/batch/', JSON.stringify(batch), { 'content-type': 'application/json' });
        return r.status === 429 ? r : undefined;
      },
      20_000,
      200,
    );
    expect(quota.json).toMatchObject({ error: 'analytics_quota_exceeded', type: 'throttled' });
    const foreign = await post('/e/', JSON.stringify(ev('x', 'w5')), { 'content-type': 'application/json', origin: 'https://evil.example.net' });
    expect(foreign.json).toMatchObject({ error: 'origin_not_allowed' });
    // A path that is no route is a 404 whatever its body's encoding.
    const nowhere = await post('/batch/extra', gzipSync('{}'), { 'content-type': 'application/json', 'content-encoding': 'gzip' });
    expect(nowhere.status).toBe(404);
  });
}
