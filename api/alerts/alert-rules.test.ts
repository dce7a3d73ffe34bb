import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routePath } from '../../schemas/api/client.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { bearer, buildTestApi, createKey, createProject, sessionHeaders, signUpAndSignIn, type SignedInUser } from '../../test/support/accounts.ts';
import { insertEndpoint } from '../../test/support/webhook-platform.ts';

/**
 * Alert rules through HTTP (issue 41): the default rule of a project that never wrote its rules, create / read /
 * change / delete, the bounds on what a tenant sends, another tenant's rules and endpoints, and the keys' scopes.
 */
let t: Awaited<ReturnType<typeof buildTestApi>>;
let owner: SignedInUser;
let other: SignedInUser;

beforeAll(async () => {
  t = await buildTestApi();
  owner = await signUpAndSignIn(t.app, t.platform);
  other = await signUpAndSignIn(t.app, t.platform);
});
afterAll(async () => t?.close());

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';
const call = (method: Method, url: string, payload?: unknown, headers = sessionHeaders(owner.cookie)) =>
  t.app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload: payload as object }) });
const rules = (slug: string) => routePath('listAlertRules', { slug });
const rule = (slug: string, ruleId: string) => routePath('getAlertRule', { slug, ruleId });
const emailRule = { name: 'Spikes', triggers: [{ type: 'event_frequency', count: 100, minutes: 10 }], actions: { email: true } };

describe('alert rules over HTTP', () => {
  it('a new project lists the default rule, unstored; the first write keeps it beside the new rule', async () => {
    const p = await createProject(t.app, owner.cookie);
    const list = await call('GET', rules(p.slug));
    expect(list.statusCode, list.body).toBe(200);
    expect(list.json()).toEqual({
      customized: false,
      rules: [
        {
          id: 'default',
          name: 'New production issues and regressions',
          enabled: true,
          default: true,
          triggers: [{ type: 'new_issue' }, { type: 'regression' }],
          environments: ['production'],
          levels: [],
          actions: { email: true, endpointIds: [] },
          throttleMinutes: 360,
          createdAt: null,
          updatedAt: null,
        },
      ],
    });
    expect((await call('GET', rule(p.slug, 'default'))).json().rule.default).toBe(true);

    const created = await call('POST', rules(p.slug), { ...emailRule, environments: ['production', 'production'], levels: ['fatal', 'error'] });
    expect(created.statusCode, created.body).toBe(201);
    const r = created.json().rule;
    expect(r).toMatchObject({
      name: 'Spikes',
      enabled: true,
      default: false,
      environments: ['production'],
      levels: ['fatal', 'error'],
      actions: { email: true, endpointIds: [] },
      throttleMinutes: 360,
    });
    expect(r.id).toMatch(/^alr_/);
    const after = (await call('GET', rules(p.slug))).json();
    expect(after.customized).toBe(true);
    expect(after.rules.map((x: { id: string }) => x.id)).toEqual(['default', r.id]);
    expect(after.rules[0].createdAt).not.toBeNull();

    const patched = await call('PATCH', rule(p.slug, r.id), { enabled: false, throttleMinutes: 5, actions: { email: true } });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json().rule).toMatchObject({ enabled: false, throttleMinutes: 5, name: 'Spikes', triggers: emailRule.triggers });

    // The default rule changes and goes like any other; with no rules left the project sends no alerts.
    expect((await call('PATCH', rule(p.slug, 'default'), { environments: [] })).json().rule).toMatchObject({ default: true, environments: [] });
    expect((await call('DELETE', rule(p.slug, 'default'))).statusCode).toBe(204);
    expect((await call('DELETE', rule(p.slug, r.id))).statusCode).toBe(204);
    expect((await call('GET', rules(p.slug))).json()).toEqual({ customized: true, rules: [] });
    expect((await call('DELETE', rule(p.slug, r.id))).json().error).toBe('not_found');
    expect((await call('GET', rule(p.slug, r.id))).statusCode).toBe(404);
  });

  it('endpoints must be the project’s: another project’s endpoint and an unknown id answer 404', async () => {
    const p = await createProject(t.app, owner.cookie);
    const q = await createProject(t.app, other.cookie);
    const mine = await insertEndpoint(t.platform, { projectId: p.id, url: 'https://hooks.example.test/a' });
    const theirs = await insertEndpoint(t.platform, { projectId: q.id, url: 'https://hooks.example.test/b' });
    const ok = await call('POST', rules(p.slug), { name: 'To the hook', triggers: [{ type: 'new_issue' }], actions: { endpointIds: [mine.id, mine.id] } });
    expect(ok.statusCode, ok.body).toBe(201);
    expect(ok.json().rule.actions).toEqual({ email: false, endpointIds: [mine.id] });
    for (const id of [theirs.id, 'whk_nosuch']) {
      const res = await call('POST', rules(p.slug), { name: 'x', triggers: [{ type: 'new_issue' }], actions: { endpointIds: [mine.id, id] } });
      expect(res.statusCode, res.body).toBe(404);
      expect(res.json().error).toBe('not_found');
      const patch = await call('PATCH', rule(p.slug, ok.json().rule.id), { actions: { endpointIds: [id] } });
      expect(patch.statusCode, patch.body).toBe(404);
    }
    // A failed first write stores nothing.
    const q2 = await createProject(t.app, other.cookie);
    const refused = await call(
      'POST',
      rules(q2.slug),
      { name: 'x', triggers: [{ type: 'new_issue' }], actions: { endpointIds: [mine.id] } },
      sessionHeaders(other.cookie),
    );
    expect(refused.statusCode).toBe(404);
    expect((await call('GET', rules(q2.slug), undefined, sessionHeaders(other.cookie))).json().customized).toBe(false);
  });

  it('refuses what is out of bounds with 400 invalid_request, never 5xx', async () => {
    const p = await createProject(t.app, owner.cookie);
    const L = LIMITS.alertRules;
    const bad: unknown[] = [
      {},
      { ...emailRule, name: '' },
      { ...emailRule, name: 'n'.repeat(L.nameChars + 1) },
      { ...emailRule, triggers: [] },
      { ...emailRule, triggers: Array.from({ length: L.triggers + 1 }, () => ({ type: 'new_issue' })) },
      { ...emailRule, triggers: [{ type: 'sometimes' }] },
      { ...emailRule, triggers: [{ type: 'event_frequency', count: 0, minutes: 10 }] },
      { ...emailRule, triggers: [{ type: 'event_frequency', count: L.count.max + 1, minutes: 10 }] },
      { ...emailRule, triggers: [{ type: 'user_frequency', count: 5, minutes: L.minutes.max + 1 }] },
      { ...emailRule, triggers: [{ type: 'user_frequency', count: 5 }] },
      { ...emailRule, triggers: [{ type: 'new_issue', count: 5 }] },
      { ...emailRule, environments: ['staging'] },
      { ...emailRule, environments: Array.from({ length: L.environments + 1 }, () => 'production') },
      { ...emailRule, levels: ['critical'] },
      { ...emailRule, actions: { email: true, endpointIds: Array.from({ length: L.endpoints + 1 }, (_, i) => `whk_${i}`) } },
      { ...emailRule, actions: { email: false } },
      { ...emailRule, actions: {} },
      { ...emailRule, throttleMinutes: 0 },
      { ...emailRule, throttleMinutes: 1.5 },
      { ...emailRule, extra: true },
    ];
    for (const body of bad) {
      const res = await call('POST', rules(p.slug), body);
      expect(res.statusCode, `${JSON.stringify(body).slice(0, 200)} -> ${res.body}`).toBe(400);
      expect(res.json().error).toBe('invalid_request');
    }
    const made = (await call('POST', rules(p.slug), emailRule)).json().rule;
    for (const body of [{ actions: { email: false } }, { name: 'x'.repeat(L.nameChars + 1) }, { triggers: [] }, { default: false }]) {
      const res = await call('PATCH', rule(p.slug, made.id), body);
      expect(res.statusCode, `${JSON.stringify(body)} -> ${res.body}`).toBe(400);
    }
    expect((await call('GET', rule(p.slug, 'r'.repeat(65)))).statusCode).toBe(400);
  });

  it(`holds at most ${LIMITS.alertRules.perProject} rules per project (409 conflict beyond)`, async () => {
    const p = await createProject(t.app, owner.cookie);
    // The default rule is stored by the first write: it counts.
    for (let i = 1; i < LIMITS.alertRules.perProject; i++) expect((await call('POST', rules(p.slug), { ...emailRule, name: `r${i}` })).statusCode).toBe(201);
    const over = await call('POST', rules(p.slug), emailRule);
    expect(over.statusCode, over.body).toBe(409);
    expect(over.json().error).toBe('conflict');
    expect((await call('GET', rules(p.slug))).json().rules).toHaveLength(LIMITS.alertRules.perProject);
  });

  it("another tenant's project and rules answer 404; keys need errors:read to read and errors:write to change", async () => {
    const p = await createProject(t.app, owner.cookie);
    const made = (await call('POST', rules(p.slug), emailRule)).json().rule;
    const stranger = sessionHeaders(other.cookie);
    for (const [method, url, body] of [
      ['GET', rules(p.slug), undefined],
      ['POST', rules(p.slug), emailRule],
      ['GET', rule(p.slug, made.id), undefined],
      ['PATCH', rule(p.slug, made.id), { enabled: false }],
      ['DELETE', rule(p.slug, made.id), undefined],
    ] as const) {
      const res = await call(method, url, body, stranger);
      expect(res.statusCode, `${method} ${url}`).toBe(404);
    }
    // Their own project cannot reach this rule by id either.
    const q = await createProject(t.app, other.cookie);
    expect((await call('PATCH', rule(q.slug, made.id), { enabled: false }, stranger)).statusCode).toBe(404);
    expect((await call('GET', rule(p.slug, made.id))).json().rule.enabled).toBe(true);

    const reader = await createKey(t.app, owner.cookie, p.slug, { kind: 'live', scopes: ['errors:read'] });
    const writer = await createKey(t.app, owner.cookie, p.slug, { kind: 'live', scopes: ['errors:read', 'errors:write'] });
    expect((await call('GET', rules(p.slug), undefined, bearer(reader.token))).statusCode).toBe(200);
    const denied = await call('POST', rules(p.slug), emailRule, { ...bearer(reader.token), 'content-type': 'application/json' });
    expect(denied.statusCode).toBe(403);
    expect((await call('POST', rules(p.slug), emailRule, { ...bearer(writer.token), 'content-type': 'application/json' })).statusCode).toBe(201);
  });
});
