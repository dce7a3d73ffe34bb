import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { alertRecipients } from '../../domain/alert-recipients.ts';
import { postResendEvent } from '../../test/support/resend.ts';
import type { TestPlatformOptions } from '../../test/support/platform.ts';
import { startInboundFixture } from '../../test/support/inbound-fixture.ts';
import { createProject, sessionHeaders } from '../../test/support/accounts.ts';

/**
 * Resend's delivery events at `POST /v1/webhooks/email` (issue 25), signed by Svix's own library: a hard bounce or a
 * complaint stops alert mail to that address until someone re-enables it in error-alert settings.
 */
const SECRET = `whsec_${Buffer.from('resend-delivery-events-test-key!').toString('base64')}`;
export function defineEmailDeliveryScenarios(name: string, opts: TestPlatformOptions = {}) {
  describe(name, () => {
    let f: Awaited<ReturnType<typeof startInboundFixture>>;
    let t: typeof f.t;
    let owner: typeof f.owner;

    beforeAll(async () => {
      f = await startInboundFixture(opts, { RESEND_WEBHOOK_SECRETS: SECRET });
      ({ t, owner } = f);
    });
    afterAll(() => f?.close());

    const send = async (type: string, to: string[]) =>
      expect((await postResendEvent(t.app, SECRET, type, { email_id: randomUUID(), from: 'alerts@service.test', to, subject: 'Alert' })).status).toBe(200);

    describe('email delivery events', () => {
      it('a bounce or a complaint suppresses alert mail to that address, shown in error-alert settings, until re-enabled', async () => {
        const p = await createProject(t.app, owner.cookie);
        const projectId = (await t.platform.db.query<{ id: string }>('SELECT id FROM projects WHERE slug = $1', [p.slug])).rows[0]!.id;
        const alerts = () => t.app.inject({ url: `/v1/projects/${p.slug}/error-alerts`, headers: sessionHeaders(owner.cookie) });
        // No list: the owner gets alert mail.
        expect(await alertRecipients(t.platform.db, projectId)).toEqual([owner.email]);

        await send('email.delivered', [owner.email]);
        await send('email.bounced', [owner.email.toUpperCase()]);
        await vi.waitFor(async () =>
          expect((await alerts()).json().suppressed).toEqual([{ email: owner.email, reason: 'bounced', since: expect.any(String) }]),
        );
        expect(await alertRecipients(t.platform.db, projectId)).toEqual([]);
        const test = await t.app.inject({ method: 'POST', url: `/v1/projects/${p.slug}/error-alerts/test`, headers: sessionHeaders(owner.cookie) });
        expect(test.statusCode).toBe(409);

        // A listed recipient who complains is suppressed too; the other one keeps receiving.
        await t.app.inject({
          method: 'PATCH',
          url: `/v1/projects/${p.slug}/error-alerts`,
          headers: sessionHeaders(owner.cookie),
          payload: { recipients: ['ops@example.test', 'dev@example.test'] },
        });
        await send('email.complained', ['ops@example.test']);
        await vi.waitFor(async () => expect(await alertRecipients(t.platform.db, projectId)).toEqual(['dev@example.test']));

        // Re-enabled from the settings: mail goes to it again. An address this project does not mail stays suppressed.
        const back = await t.app.inject({
          method: 'PATCH',
          url: `/v1/projects/${p.slug}/error-alerts`,
          headers: sessionHeaders(owner.cookie),
          payload: { reenable: ['ops@example.test', owner.email] },
        });
        expect(back.json().suppressed).toEqual([]);
        expect(await alertRecipients(t.platform.db, projectId)).toEqual(['dev@example.test', 'ops@example.test']);
        expect((await t.platform.db.query('SELECT email FROM mail_suppressions WHERE email = $1', [owner.email])).rows).toHaveLength(1);
      });
    });
  });
}
