import * as core from '@sentry/core';
import * as Sentry from '@sentry/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uptimeRepository } from '../../../api/uptime/uptime-repository.ts';
import { startIngestServer, type IngestServer } from '../../../ingest/ingest-server.ts';
import { ManualClock } from '../../../platform/clock.ts';
import type { Platform } from '../../../platform/platform.ts';
import { dsnPublicKey } from '../../../platform/sentry-dsn.ts';
import { createIngestProject, projectNumberOf, type IngestProject } from '../../../test/support/ingest-fixtures.ts';
import { createTestPlatform, processed } from '../../../test/support/platform.ts';
import { inertMailer } from '../../../test/support/stubs.ts';
import { startClientItemsConsumer } from '../../client-items/client-items-consumer.ts';
import type { PipelineConsumer } from '../../pipeline-consumer.ts';
import { startUptimeMonitor, type UptimeMonitor } from '../uptime-monitor.ts';

/**
 * The real SDK's cron monitoring (@sentry/node's withMonitor) against a test edge, a failing job and one that stops
 * checking in, two ways: each check_in item the SDK writes sent to Sentry's HTTP cron form as it is (the form's POST
 * body is a check_in item's payload), and the SDK's own transport posting its envelopes to the DSN (the envelope
 * route's check_in items, ingest/sentry/). Either way through the edge, the bus and the client-items consumer into the
 * check-in pipeline; the uptime monitor finds what did not come.
 */
describe('withMonitor from @sentry/node against a test edge', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 25, 12, 0, 0));
  let platform: Platform;
  let edge: IngestServer;
  let consumer: PipelineConsumer<string>;
  let monitor: UptimeMonitor;
  let p: IngestProject;
  let client: Sentry.NodeClient;
  const answers: number[] = [];

  beforeAll(async () => {
    platform = await createTestPlatform({ env: { SETTINGS_REFRESH_MS: '100' }, overrides: { clock, mailer: inertMailer } });
    p = await createIngestProject(platform);
    const number = await projectNumberOf(platform, p.projectId);
    edge = await startIngestServer(platform, { port: 0, host: '127.0.0.1' });
    consumer = await startClientItemsConsumer(platform);
    monitor = await startUptimeMonitor(platform, { tickMs: false });
    const key = dsnPublicKey(p.ingestKey);
    client = new Sentry.NodeClient({
      dsn: `http://${key}@127.0.0.1:${edge.port}/${number}`,
      release: 'abc1234',
      environment: 'production',
      integrations: [],
      stackParser: core.createStackParser(),
      transport: (o) =>
        core.createTransport(o, async (req) => {
          const lines = (typeof req.body === 'string' ? req.body : Buffer.from(req.body).toString('utf8')).split('\n');
          for (let i = 1; i + 1 < lines.length; i += 2) {
            if (JSON.parse(lines[i]!).type !== 'check_in') continue;
            const payload = JSON.parse(lines[i + 1]!) as { monitor_slug: string };
            const res = await fetch(`http://127.0.0.1:${edge.port}/api/${number}/cron/${encodeURIComponent(payload.monitor_slug)}/${key}/`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: lines[i + 1],
            });
            answers.push(res.status);
          }
          return { statusCode: 200 };
        }),
    });
    Sentry.getCurrentScope().setClient(client);
    client.init();
  });
  afterAll(async () => {
    await client?.close(2000);
    await monitor?.stop();
    await consumer?.stop();
    await edge?.close();
    await platform?.close();
  });

  const heartbeat = async (slug: string) => (await uptimeRepository.list(platform.db, p.projectId)).find((m) => m.heartbeat?.slug === slug);
  const settle = async () => {
    await client.flush(5000);
    await processed(platform);
  };
  const hourly = { schedule: { type: 'crontab' as const, value: '0 * * * *' }, checkinMargin: 5, maxRuntime: 10 };

  it('a job that throws: the monitor is made from its config and goes down (failed)', async () => {
    expect(() =>
      Sentry.withMonitor(
        'invoice-run',
        () => {
          throw new Error('the invoice job broke');
        },
        hourly,
      ),
    ).toThrow('the invoice job broke');
    await settle();
    expect(answers).toEqual([202, 202]);
    const m = await heartbeat('invoice-run');
    expect(m).toMatchObject({ kind: 'heartbeat', state: 'down', lastCheck: { ok: false, error: 'failed' }, heartbeat: { lastCheckIn: { status: 'error' } } });
    const checkIns = await uptimeRepository.checkIns(platform.db, m!.id, 10);
    expect(checkIns).toEqual([expect.objectContaining({ status: 'error', environment: 'production', release: 'abc1234' })]);
    const [incident] = await uptimeRepository.incidents(platform.db, p.projectId, { monitorId: m!.id, limit: 5 });
    expect(incident).toMatchObject({ ended_at: null, cause_error: 'failed' });
  });

  it('a job that stops checking in: missed once its next run and margin have passed', async () => {
    await Sentry.withMonitor('nightly-sync', async () => 'synced', hourly);
    await settle();
    expect(await heartbeat('nightly-sync')).toMatchObject({ state: 'up', heartbeat: { lastCheckIn: { status: 'ok' } } });
    clock.advance(64 * 60_000); // 13:04: within the margin of the 13:00 run
    await monitor.tick();
    await monitor.idle();
    expect((await heartbeat('nightly-sync'))!.state).toBe('up');
    clock.advance(2 * 60_000); // 13:06
    await monitor.tick();
    await monitor.idle();
    const m = await heartbeat('nightly-sync');
    expect(m).toMatchObject({ state: 'down', lastCheck: { error: 'missed' }, heartbeat: { lastCheckIn: { status: 'missed' } } });
    expect((await uptimeRepository.checkIns(platform.db, m!.id, 10)).map((c) => c.status)).toEqual(['missed', 'ok']);
  });
  it("through the envelope route: the SDK's own transport sends check_in items to the DSN, a failing job and one that stops", async () => {
    const number = await projectNumberOf(platform, p.projectId);
    const direct = new Sentry.NodeClient({
      dsn: `http://${dsnPublicKey(p.ingestKey)}@127.0.0.1:${edge.port}/${number}`,
      release: 'def5678',
      environment: 'staging',
      integrations: [],
      stackParser: core.createStackParser(),
      transport: Sentry.makeNodeTransport,
    });
    direct.init();
    const scope = new core.Scope();
    scope.setClient(direct);
    try {
      await core.withScope(scope, async () => {
        await expect(
          Sentry.withMonitor(
            'envelope-job',
            async () => {
              throw new Error('the envelope job broke');
            },
            hourly,
          ),
        ).rejects.toThrow('the envelope job broke');
        await Sentry.withMonitor('envelope-sync', async () => 'synced', hourly);
      });
      await direct.flush(5000);
      await processed(platform);
      const failing = await heartbeat('envelope-job');
      expect(failing).toMatchObject({ state: 'down', lastCheck: { error: 'failed' } });
      expect(await uptimeRepository.checkIns(platform.db, failing!.id, 10)).toEqual([
        expect.objectContaining({ status: 'error', environment: 'staging', release: 'def5678' }),
      ]);
      const quiet = await heartbeat('envelope-sync');
      expect(quiet).toMatchObject({ state: 'up' });
      clock.set(new Date(quiet!.heartbeat!.nextExpectedAt!).getTime() + 6 * 60_000);
      await monitor.tick();
      await monitor.idle();
      expect(await heartbeat('envelope-sync')).toMatchObject({ state: 'down', lastCheck: { error: 'missed' } });
    } finally {
      await direct.close(2000);
    }
  });
});
