import { generateKeyPairSync, randomUUID } from 'node:crypto';
import nodemailer from 'nodemailer';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import type { Subscription } from '../../platform/ports/bus.ts';
import { startInboundConsumer } from '../../processor/inbound/inbound-consumer.ts';
import type { PipelineConsumer } from '../../processor/pipeline-consumer.ts';
import * as projectEvents from '../../schemas/bus/project-events.ts';
import type { EmailReceivedData } from '../../schemas/project-events.ts';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn } from '../../test/support/accounts.ts';
import { describeWith } from '../../test/support/backends.ts';
import { postResendEvent } from '../../test/support/resend.ts';
import { steerableGuard } from '../../test/support/outbound-guard.ts';

/**
 * Inbound mail in the production shape (issue 25): the verified delivery crosses Kafka to the inbound pipeline, the
 * message is stored in Postgres, and email.received goes out on the project events topic (twice: the project's
 * endpoints and the inbox's own webhookUrl). The delivery of project events over Kafka is webhook-kafka.int.test.ts's.
 */
const SECRET = `whsec_${Buffer.from('resend-inbound-mail-kafka-key-32').toString('base64')}`;

describeWith(['postgres', 'kafka', 'clickhouse'], 'inbound mail on Postgres, Kafka and ClickHouse', () => {
  let t: Awaited<ReturnType<typeof buildTestApi>>;
  let consumer: PipelineConsumer<string>;
  let watch: Subscription;
  const suffix = randomUUID().slice(0, 8);
  const seen: projectEvents.ProjectEvent[] = [];
  const txt: Record<string, string[]> = {};

  beforeAll(async () => {
    const outbound = steerableGuard({ unknownNames: 'fail' });
    outbound.table['hooks.example.com'] = ['93.184.215.14']; // the inbox's webhookUrl: checked, never dialled here
    t = await buildTestApi({
      real: { postgres: true, kafka: true, clickhouse: true },
      env: { RESEND_WEBHOOK_SECRETS: SECRET, BUS_NAME_SUFFIX: `.inbound-mail-${suffix}` },
      overrides: { outbound: outbound.guard, txt: { resolveTxt: async (name) => txt[name.toLowerCase()] ?? [] } },
    });
    consumer = await startInboundConsumer(t.platform);
    watch = await t.platform.bus.subscribe(projectEvents.TOPIC, `mail-watch-${suffix}`, async (ms) => {
      for (const m of ms) {
        const e = projectEvents.decode(m.value);
        if (e) seen.push(e);
      }
    });
  });
  afterAll(async () => {
    await watch?.stop();
    await consumer?.stop();
    await t?.close();
  });

  it('a DKIM-signed message becomes a stored .eml and email.received for the project and for the inbox, once each, redelivered or not', async () => {
    const owner = await signUpAndSignIn(t.app, t.platform);
    const p = await createProject(t.app, owner.cookie);
    const created = await t.app.inject({
      method: 'POST',
      url: `/v1/projects/${p.slug}/email/inboxes`,
      headers: sessionHeaders(owner.cookie),
      payload: { localPart: 'orders', webhookUrl: 'https://hooks.example.com/mail' },
    });
    expect(created.statusCode).toBe(201);
    const inbox = created.json().inbox as { id: string; address: string };

    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    txt['k1._domainkey.shop.test'] = [`v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`];
    const transport = nodemailer.createTransport({
      streamTransport: true,
      buffer: true,
      dkim: { domainName: 'shop.test', keySelector: 'k1', privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() },
    });
    const raw = (await transport.sendMail({ from: 'Shop <orders@shop.test>', to: inbox.address, subject: 'Order 7', text: 'thanks' })).message as Buffer;

    const data = { to: [inbox.address], raw: raw.toString('base64') };
    const first = await postResendEvent(t.app, SECRET, 'email.received', data);
    expect([first.status, (await postResendEvent(t.app, SECRET, 'email.received', data, first.id)).status]).toEqual([200, 200]);

    const mine = () => seen.filter((e) => e.event === 'email.received' && (e.data as EmailReceivedData).inbox.id === inbox.id);
    await vi.waitFor(() => expect(mine()).toHaveLength(2), { timeout: 60_000, interval: 100 });
    const [forProject, forInbox] = [mine().find((e) => !e.inboxId)!, mine().find((e) => e.inboxId)!];
    expect(forInbox.inboxId).toBe(inbox.id);
    expect(forInbox.data).toEqual(forProject.data);
    const message = (forProject.data as EmailReceivedData).message;
    expect(message).toMatchObject({ from: 'orders@shop.test', fromName: 'Shop', subject: 'Order 7', senderAuthenticated: true });
    const eml = await t.app.inject({
      url: `/v1/projects/${p.slug}/email/inboxes/${inbox.id}/messages/${message.id}/raw`,
      headers: sessionHeaders(owner.cookie),
    });
    expect(eml.rawPayload.equals(raw)).toBe(true);
    expect(consumer.stats().duplicates + consumer.stats().accepted).toBeGreaterThanOrEqual(1);
  });
});
