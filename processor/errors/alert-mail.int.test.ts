import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../platform/clock.ts';
import type { Subscription } from '../../platform/ports/bus.ts';
import { encodeErrorBatchV1 } from '../../schemas/bus/error-events.ts';
import type { StampedErrorBatch } from '../../schemas/error-event.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn } from '../../test/support/accounts.ts';
import { processed } from '../../test/support/platform.ts';
import { startErrorConsumer } from './error-consumer.ts';
import { batch, event } from './error-pipeline.test-scenarios.ts';
import { startSmtpReceiver } from '../../test/support/smtp-receiver.ts';

/**
 * Alert mail through a real SMTP conversation (nodemailer -> smtp-server), with the 6-hour
 * per-issue limit and the 15-minute test-alert limit driven by a ManualClock.
 */
describe('error alert mail over SMTP', () => {
  const clock = new ManualClock();
  let receiver: Awaited<ReturnType<typeof startSmtpReceiver>>;
  let t: Awaited<ReturnType<typeof buildTestApi>>;
  let sub: Subscription;
  let cookie: string;

  beforeAll(async () => {
    receiver = await startSmtpReceiver();
    t = await buildTestApi({ env: { SMTP_URL: receiver.url }, overrides: { clock } });
    expect(t.platform.mailer.adapter).toBe('smtp');
    sub = await startErrorConsumer(t.platform);
    cookie = (await signUpAndSignIn(t.app, t.platform)).cookie;
  });
  afterAll(async () => {
    await sub?.stop();
    await t?.close();
    await receiver?.stop();
  });

  /** Publish and wait until the pipeline processed it (the bus's publish resolves once its log holds the batch). */
  const publish = async (m: StampedErrorBatch) => {
    await t.platform.bus.publish(TOPICS.errorEvents, [{ key: m.projectId, value: encodeErrorBatchV1(m) }]);
    await processed(t.platform);
  };
  const inject = (method: 'POST' | 'PATCH', url: string, payload: object = {}) => t.app.inject({ method, url, headers: sessionHeaders(cookie), payload });

  it('mails a new production issue, then a regression only after 6 hours', async () => {
    const p = await createProject(t.app, cookie, { name: 'Shop Front', environmentHosts: { production: ['shop.example.com'] } });
    await inject('PATCH', `/v1/projects/${p.slug}/error-alerts`, { recipients: ['oncall@example.test'] });
    const start = receiver.messages.length;
    const stack = 'TypeError: x\n    at renderCart (https://shop.example.com/assets/cart.js:3:9)';
    await publish(batch(p.id, [event({ message: "Cannot read properties of undefined (reading 'items')", stack })], { originHost: 'shop.example.com' }));
    await receiver.waitFor(start + 1);
    const mail = receiver.messages[start]!;
    expect(mail.to).toEqual(['oncall@example.test']);
    const body = mail.text;
    const groupId = /errors\/(grp_[0-9a-f]{24})/.exec(body)?.[1];
    expect(groupId).toBeDefined();
    expect(body).toContain('Shop Front');
    expect(body).toContain('environment production');
    expect(body).toContain("TypeError: Cannot read properties of undefined (reading 'items')");
    expect(body).toContain('Occurrences: 1');
    expect(body).toContain('renderCart (https://shop.example.com/assets/cart.js:3:9)');
    expect(body).toContain('Hint, not a diagnosis');
    expect(body).toContain(`http://localhost:8080/projects/${p.slug}/errors/${groupId}`);

    // resolved and back within 6 hours: a regression, but no mail
    expect((await inject('POST', `/v1/projects/${p.slug}/errors/${groupId}/resolve`)).statusCode).toBe(200);
    clock.advance(5 * 60 * 60 * 1000);
    await publish(batch(p.id, [event({ message: "Cannot read properties of undefined (reading 'items')", stack })], { originHost: 'shop.example.com' }));
    // after 6 hours the next regression mails
    expect((await inject('POST', `/v1/projects/${p.slug}/errors/${groupId}/resolve`)).statusCode).toBe(200);
    clock.advance(60 * 60 * 1000);
    await publish(batch(p.id, [event({ message: "Cannot read properties of undefined (reading 'items')", stack })], { originHost: 'shop.example.com' }));
    await receiver.waitFor(start + 2);
    const second = receiver.messages[start + 1]!.text;
    expect(receiver.messages[start + 1]!.subject).toContain('Regression in production');
    expect(receiver.messages[start]!.subject).toContain('New issue in production');
    expect(second).toContain('Occurrences: 3');
  });

  it('sends the test alert through SMTP at most once per 15 minutes', async () => {
    const p = await createProject(t.app, cookie);
    await inject('PATCH', `/v1/projects/${p.slug}/error-alerts`, { recipients: ['team@example.test'] });
    const start = receiver.messages.length;
    expect((await inject('POST', `/v1/projects/${p.slug}/error-alerts/test`)).statusCode).toBe(202);
    await receiver.waitFor(start + 1);
    expect(receiver.messages[start]!.to).toEqual(['team@example.test']);
    expect(receiver.messages[start]!.subject).toContain('Test error alert');
    clock.advance(14 * 60 * 1000);
    const refused = await inject('POST', `/v1/projects/${p.slug}/error-alerts/test`);
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('60');
    clock.advance(60 * 1000);
    expect((await inject('POST', `/v1/projects/${p.slug}/error-alerts/test`)).statusCode).toBe(202);
    await receiver.waitFor(start + 2);
  });
});
