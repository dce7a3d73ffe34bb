import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Platform } from '../../platform/platform.ts';
import { ManualClock } from '../../platform/clock.ts';
import { publishProjectEvent } from '../../domain/project-event-publisher.ts';
import { describeWith } from '../../test/support/backends.ts';
import { allowAllLimiter } from '../../test/support/ingest-fixtures.ts';
import { createTestPlatform } from '../../test/support/platform.ts';
import { startHttpsReceiver, type HttpsReceiver } from '../../test/support/https-receiver.ts';
import { insertEndpoint, insertProject } from '../../test/support/webhook-platform.ts';
import { startWebhookDispatcher, type WebhookDispatcher } from './webhook-dispatcher.ts';
import { createTestOutboundGuard } from '../../platform/adapters/outbound/test-guard.ts';
import { inertAnalytics, inertMailer } from '../../test/support/stubs.ts';

/**
 * The production shape: events through Kafka (at-least-once), deliveries in Postgres. A message the
 * bus hands over again (here: the same event id published twice) sends nothing twice.
 */
describeWith(['postgres', 'kafka'], 'webhooks through Kafka and Postgres', () => {
  let receiver: HttpsReceiver;
  let platform: Platform;
  let dispatcher: WebhookDispatcher;

  beforeAll(async () => {
    receiver = await startHttpsReceiver();
    platform = await createTestPlatform({
      real: { postgres: true, kafka: true },
      overrides: {
        clock: new ManualClock(Date.now()),
        analytics: inertAnalytics,
        limiter: allowAllLimiter,
        mailer: inertMailer,
        outbound: createTestOutboundGuard({ ca: receiver.cert }),
      },
    });
    dispatcher = await startWebhookDispatcher(platform, { sweepIntervalMs: false });
  });

  afterAll(async () => {
    await dispatcher?.stop();
    await platform?.close();
    await receiver?.close();
  });

  it('delivers a published event once, even when the same event comes through the bus again', async () => {
    const { projectId } = await insertProject(platform);
    await insertEndpoint(platform, { projectId, url: receiver.url, events: ['deploy.*'] });
    const mine = () => receiver.requests.filter((r) => JSON.parse(r.body).data.projectId === projectId);

    const first = await publishProjectEvent(platform, { projectId, event: 'deploy.succeeded', data: { projectId, n: 1 } });
    await receiver.waitFor(1, 60_000);
    await publishProjectEvent(platform, { id: first.id, projectId, event: 'deploy.succeeded', data: { projectId, n: 1 } });
    // Same key, same partition, so once the next event arrives the repeat has been consumed.
    await publishProjectEvent(platform, { projectId, event: 'deploy.failed', data: { projectId, n: 2 } });
    const deadline = Date.now() + 60_000;
    while (mine().length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    await dispatcher.idle();
    expect(mine().map((r) => JSON.parse(r.body).event)).toEqual(['deploy.succeeded', 'deploy.failed']);
  });
});
