import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, buildTestApi, createCliToken, createProject, sessionHeaders, signUpAndSignIn, type SignedInUser } from '../../test/support/accounts.ts';
import { steerableGuard } from '../../test/support/outbound-guard.ts';

/** `/v1/projects/:slug/email/inboxes` (issue 25, spec §6.2): mailbox inboxes and their own webhook target. */
let t: Awaited<ReturnType<typeof buildTestApi>>;
let owner: SignedInUser;

beforeAll(async () => {
  const outbound = steerableGuard({ unknownNames: 'fail' });
  outbound.table['hooks.example.test'] = ['93.184.216.34'];
  outbound.table['internal.example.test'] = ['10.0.0.7'];
  outbound.loopback = false;
  t = await buildTestApi({ env: { INBOUND_EMAIL_DOMAIN: 'mail.example.test' }, overrides: { outbound: outbound.guard } });
  owner = await signUpAndSignIn(t.app, t.platform);
});
afterAll(async () => t?.close());

describe('mailbox inboxes', () => {
  it('creates an inbox at <local>@<slug>.<domain>, shows its webhook secret once, lists and deletes it', async () => {
    const p = await createProject(t.app, owner.cookie);
    const url = `/v1/projects/${p.slug}/email/inboxes`;
    const made = await t.app.inject({
      method: 'POST',
      url,
      headers: sessionHeaders(owner.cookie),
      payload: { localPart: 'support', webhookUrl: 'https://hooks.example.test/mail' },
    });
    expect(made.statusCode).toBe(201);
    const { inbox } = made.json();
    expect(inbox).toMatchObject({ address: `support@${p.slug}.mail.example.test`, webhookUrl: 'https://hooks.example.test/mail' });
    expect(inbox.webhookSecret).toMatch(/^whsec_/);
    const plain = await t.app.inject({ method: 'POST', url, headers: sessionHeaders(owner.cookie), payload: { localPart: 'sales' } });
    expect(plain.json().inbox.webhookSecret).toBeNull();

    const cli = await createCliToken(t.app, owner.cookie);
    const listed = (await t.app.inject({ url, headers: bearer(cli.token) })).json().inboxes;
    expect(listed.map((i: { address: string }) => i.address).sort()).toEqual([`sales@${p.slug}.mail.example.test`, `support@${p.slug}.mail.example.test`]);
    expect(JSON.stringify(listed)).not.toContain('whsec_');
    // Never among the project's webhooks.
    expect((await t.app.inject({ url: `/v1/projects/${p.slug}/webhooks`, headers: sessionHeaders(owner.cookie) })).json().endpoints).toEqual([]);

    expect((await t.app.inject({ method: 'DELETE', url: `${url}/${inbox.id}`, headers: sessionHeaders(owner.cookie) })).statusCode).toBe(204);
    expect((await t.app.inject({ method: 'DELETE', url: `${url}/${inbox.id}`, headers: sessionHeaders(owner.cookie) })).statusCode).toBe(404);
  });

  it('refuses a taken address, a bad local part, and a webhook URL that is not public https', async () => {
    const p = await createProject(t.app, owner.cookie);
    const post = (payload: Record<string, unknown>) =>
      t.app.inject({ method: 'POST', url: `/v1/projects/${p.slug}/email/inboxes`, headers: sessionHeaders(owner.cookie), payload });
    expect((await post({ localPart: 'hello' })).statusCode).toBe(201);
    expect((await post({ localPart: 'hello' })).statusCode).toBe(409);
    for (const localPart of ['Hello', '-x', 'a b', 'x@y', '', 'a'.repeat(65)]) expect((await post({ localPart })).statusCode).toBe(400);
    expect((await post({ localPart: 'a1', webhookUrl: 'http://hooks.example.test/mail' })).json().error).toBe('url_not_https');
    expect((await post({ localPart: 'a2', webhookUrl: 'https://internal.example.test/mail' })).json().error).toBe('url_private_host');
    expect((await post({ localPart: 'a3', webhookUrl: 'https://127.0.0.1/mail' })).json().error).toBe('url_private_host');
  });

  it('belongs to its project: another user sees nothing', async () => {
    const p = await createProject(t.app, owner.cookie);
    const stranger = await signUpAndSignIn(t.app, t.platform);
    expect((await t.app.inject({ url: `/v1/projects/${p.slug}/email/inboxes`, headers: sessionHeaders(stranger.cookie) })).statusCode).toBe(404);
  });
});
