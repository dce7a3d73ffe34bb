import { describe, expect, it } from 'vitest';
import type { Attempt } from '../../../schemas/api/webhooks.ts';
import { cx } from './fake-cli.ts';

/** `cx webhooks deliveries | replay | test`: an endpoint's attempts as a table, a replay and a test event queued. */
const attempt = (over: Partial<Attempt> = {}): Attempt => ({
  deliveryId: 'dlv_1',
  eventId: 'evt_1',
  event: 'webhook.test',
  attempt: 1,
  status: 'failed',
  responseCode: 500,
  error: null,
  startedAt: '2025-01-02T03:04:05.000Z',
  finishedAt: '2025-01-02T03:04:06.000Z',
  nextAttemptAt: null,
  deliveryStatus: 'dead',
  deliveryNextAttemptAt: null,
  ...over,
});

describe('cx webhooks', () => {
  it('deliveries prints the attempts as a table, and --json the answer', async () => {
    const answer = { deliveries: [attempt(), attempt({ attempt: 2, responseCode: null, error: 'timeout' })] };
    const r = await cx(['webhooks', 'deliveries', '-p', 'shop', 'wh_1'], { 'GET /projects/shop/webhooks/wh_1/deliveries': answer });
    expect(r.stdout).toBe(
      'DELIVERY  EVENT         ATTEMPT  STATUS  CODE  ERROR    AT\n' +
        'dlv_1     webhook.test  1        failed  500   -        2025-01-02T03:04:05.000Z\n' +
        'dlv_1     webhook.test  2        failed  -     timeout  2025-01-02T03:04:05.000Z\n',
    );
    const j = await cx(['webhooks', 'deliveries', '-p', 'shop', 'wh_1', '--json'], { 'GET /projects/shop/webhooks/wh_1/deliveries': answer });
    expect(JSON.parse(j.stdout)).toEqual(answer);
  });

  it('deliveries without an endpoint id is a usage error', async () => {
    const r = await cx(['webhooks', 'deliveries', '-p', 'shop']);
    expect([r.code, r.calls]).toEqual([2, []]);
    expect(r.stderr).toMatch(/missing required argument 'endpointId'/);
  });

  it('replay posts to the delivery and says it is queued', async () => {
    const r = await cx(['webhooks', 'replay', '-p', 'shop', 'dlv_1'], {
      'POST /projects/shop/webhooks/deliveries/dlv_1/replay': { delivery: { id: 'dlv_2' } },
    });
    expect([r.code, r.stdout, r.calls[0]!.body]).toEqual([0, 'Replay of dlv_1 queued\n', undefined]);
    const j = await cx(['webhooks', 'replay', '-p', 'shop', 'dlv_1', '--json'], {
      'POST /projects/shop/webhooks/deliveries/dlv_1/replay': { delivery: { id: 'dlv_2' } },
    });
    expect(JSON.parse(j.stdout)).toEqual({ delivery: { id: 'dlv_2' } });
  });

  it('test sends webhook.test', async () => {
    const r = await cx(['webhooks', 'test', '-p', 'shop'], { 'POST /projects/shop/webhooks/test': { eventId: 'evt_2' } });
    expect([r.code, r.stdout]).toEqual([0, 'webhook.test sent to the endpoints subscribed to it\n']);
    expect(JSON.parse((await cx(['webhooks', 'test', '-p', 'shop', '--json'], { 'POST /projects/shop/webhooks/test': { eventId: 'evt_2' } })).stdout)).toEqual({
      eventId: 'evt_2',
    });
  });
});
