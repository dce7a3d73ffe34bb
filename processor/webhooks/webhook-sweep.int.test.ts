import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Platform } from '../../platform/platform.ts';
import { ManualClock } from '../../platform/clock.ts';
import { describeWith } from '../../test/support/backends.ts';
import { startHttpsReceiver, type HttpsReceiver } from '../../test/support/https-receiver.ts';
import { createWebhookTestPlatform, insertEndpoint, insertProject } from '../../test/support/webhook-platform.ts';
import { startWebhookDispatcher, type WebhookDispatcher } from './webhook-dispatcher.ts';
import { deliveriesRepository } from './deliveries-repository.ts';

/**
 * Several processors sweep the same Postgres at once: FOR UPDATE SKIP LOCKED plus the lease means
 * each due delivery is claimed by exactly one of them, so no delivery is sent twice.
 */
describeWith(['postgres'], 'webhook sweep on Postgres with several processors', () => {
  let receiver: HttpsReceiver;
  const platforms: Array<Platform & { clock: ManualClock }> = [];
  const dispatchers: WebhookDispatcher[] = [];

  beforeAll(async () => {
    receiver = await startHttpsReceiver();
    // Postgres is shared with the e2e tests, whose processors sweep every due delivery of the database on a real
    // clock (and cannot send to this receiver). These sweepers live 50 years ahead: what they make due is not due
    // for anyone else.
    const future = Date.now() + 50 * 365 * 24 * 60 * 60 * 1000;
    for (let i = 0; i < 3; i++) {
      const p = await createWebhookTestPlatform({ postgres: true, ca: receiver.cert, clock: new ManualClock(future) });
      platforms.push(p);
      dispatchers.push(await startWebhookDispatcher(p, { sweepIntervalMs: false, batchSize: 20, concurrency: 8 }));
    }
  });

  afterAll(async () => {
    for (const d of dispatchers) await d.stop();
    for (const p of platforms) await p.close();
    await receiver?.close();
  });

  it('three concurrent sweepers send each of 400 due deliveries exactly once', async () => {
    const [a] = platforms;
    const { projectId } = await insertProject(a);
    const ep1 = await insertEndpoint(a, { projectId, url: receiver.url });
    const ep2 = await insertEndpoint(a, { projectId, url: receiver.url });
    const ids: string[] = [];
    for (let i = 0; i < 200; i++) {
      const ev = { id: `evt_sweep_${projectId}_${i}`, projectId, event: 'user.created' as const, data: { i }, occurredAt: a.clock.now() };
      ids.push(
        ...(await deliveriesRepository.insert(
          a.db,
          [
            { event: ev, target: { kind: 'endpoint', id: ep1.id, maxAttempts: 6 } },
            { event: ev, target: { kind: 'endpoint', id: ep2.id, maxAttempts: 6 } },
          ],
          a.clock.now(),
        )),
      );
    }
    expect(ids).toHaveLength(400);
    const mine = new Set(ids);

    await Promise.all(dispatchers.flatMap((d) => [d.sweepOnce(), d.sweepOnce()]));

    const sent = receiver.requests.map((r) => r.headers['service-webhook-id'] as string).filter((id) => mine.has(id));
    // On a mismatch, say where the others are (status, attempts, the sender's last error), so a failure explains itself.
    const where = async () =>
      JSON.stringify(
        (
          await a.db.query(
            'SELECT status, attempts, attempt_seq, left(last_error, 120) AS last_error, count(*)::int AS n FROM webhook_deliveries WHERE project_id = $1 GROUP BY 1, 2, 3, 4',
            [projectId],
          )
        ).rows,
      );
    if (sent.length !== 400) expect.fail(`sent ${sent.length} of 400: ${await where()}`);
    expect(new Set(sent).size).toBe(400);
    const { rows } = await a.db.query<{ status: string; n: number }>(
      'SELECT status, count(*)::int AS n FROM webhook_deliveries WHERE project_id = $1 GROUP BY status',
      [projectId],
    );
    expect(rows).toEqual([{ status: 'succeeded', n: 400 }]);
    // Each was attempted once (attempt_seq counts every claim, so a double claim would show here).
    const seq = await a.db.query<{ max: number }>('SELECT max(attempt_seq)::int AS max FROM webhook_deliveries WHERE project_id = $1', [projectId]);
    expect(seq.rows[0].max).toBe(1);
  });

  it('a delivery whose sender died mid-send is taken over by one other sweeper after its lease, once', async () => {
    const [a] = platforms;
    const { projectId } = await insertProject(a);
    const ep = await insertEndpoint(a, { projectId, url: receiver.url });
    const now = a.clock.now();
    const id = `dlv_crashed_${projectId}`;
    await a.db.query(
      `INSERT INTO webhook_deliveries (id, project_id, endpoint_id, event_id, event, data, status, attempts, max_attempts, attempt_seq, next_attempt_at, lease_until, lease_token, created_at, updated_at)
       VALUES ($1, $2, $3, $1, 'deploy.failed', '{}', 'sending', 0, 6, 1, $4, $5, 'dead-process', $4, $4)`,
      [id, projectId, ep.id, new Date(now), new Date(now - 1)],
    );
    await Promise.all(dispatchers.map((d) => d.sweepOnce()));
    expect(receiver.requests.filter((r) => r.headers['service-webhook-id'] === id)).toHaveLength(1);
    const { rows } = await a.db.query('SELECT status, attempts FROM webhook_deliveries WHERE id = $1', [id]);
    expect(rows[0]).toEqual({ status: 'succeeded', attempts: 1 });
  });
});
