import { describe, expect, it } from 'vitest';
import { TOPICS } from '../topics.ts';
import * as analyticsEvents from './analytics-events.ts';
import * as clientItems from './client-items.ts';
import * as deployRequests from './deploy-requests.ts';
import * as errorEvents from './error-events.ts';
import * as inboundEvents from './inbound-events.ts';
import * as projectEvents from './project-events.ts';

/** Each bus module (README.md) is the one way its topic's bytes are written and read. */
describe('the bus contract', () => {
  it('names every topic once, each by its own module', () => {
    expect([errorEvents.TOPIC, analyticsEvents.TOPIC, projectEvents.TOPIC, deployRequests.TOPIC, inboundEvents.TOPIC, clientItems.TOPIC].sort()).toEqual(
      Object.values(TOPICS).sort(),
    );
  });

  it('reads back what it writes, and nothing that is no message of the topic', () => {
    const analytics: analyticsEvents.AnalyticsBatchMessage = {
      v: 1,
      batchId: 'b1',
      projectId: 'prj_1',
      originHost: null,
      receivedAt: 1,
      events: [{ uuid: 'u', event: 'e', distinctId: 'd', properties: {}, timestamp: 1 }],
    };
    expect(analyticsEvents.decode(analyticsEvents.encode(analytics))).toEqual(analytics);
    const deploy = { v: 1 as const, deployId: 'dep_1', projectId: 'prj_1' };
    expect(deployRequests.decode(deployRequests.encode(deploy))).toEqual(deploy);
    const event: projectEvents.ProjectEvent = { id: 'evt_1', projectId: 'prj_1', event: 'webhook.test', data: { a: 1 }, occurredAt: 1 };
    expect(projectEvents.decode(projectEvents.encode(event))).toEqual(event);
    const inbound: inboundEvents.InboundEvent = {
      v: 1,
      provider: 'github',
      deliveryId: 'd-1',
      event: 'push',
      receivedAt: 1,
      payload: { ref: 'refs/heads/main' },
    };
    expect(inboundEvents.decode(inboundEvents.encode(inbound))).toEqual(inbound);
    const errors = errorEvents.encodeErrorBatchV1({ projectId: 'prj_1', originHost: null, receivedAt: 1, events: [] });
    expect(errorEvents.decode(errors)).toEqual({ projectId: 'prj_1', originHost: null, receivedAt: 1, events: [] });

    const items: clientItems.ClientItemsMessage = {
      v: 1,
      batchId: 'b2',
      projectId: 'prj_1',
      originHost: 'app.example.com',
      receivedAt: 1,
      sessions: [{ sid: 's1', init: true, status: 'ok', errors: 0, started: 1, timestamp: 1 }],
      checkIns: [{ checkInId: 'c1', monitorSlug: 'nightly', status: 'ok', timestamp: 1, monitorConfig: { schedule: { type: 'crontab', value: '0 * * * *' } } }],
    };
    expect(clientItems.decode(clientItems.encode(items))).toEqual(items);
    expect(clientItems.decode(Buffer.from(JSON.stringify({ ...items, sessions: [{ sid: 's1' }] })))).toBeUndefined();

    for (const junk of [Buffer.from('not json'), Buffer.from('{}'), Buffer.from('[1]'), Buffer.from('{"v":9}')]) {
      expect([
        analyticsEvents.decode(junk),
        deployRequests.decode(junk),
        projectEvents.decode(junk),
        errorEvents.decode(junk),
        clientItems.decode(junk),
      ]).toEqual([undefined, undefined, undefined, undefined, undefined]);
    }
    // an analytics event without its uuid is no stamped event
    expect(analyticsEvents.decode(Buffer.from(JSON.stringify({ ...analytics, events: [{ event: 'e', distinctId: 'd', timestamp: 1 }] })))).toBeUndefined();
  });

  it('refuses to write a project event the fan-out would drop', () => {
    expect(() => projectEvents.encode({ id: 'evt_1', projectId: 'prj_1', event: 'no.such.event' as 'webhook.test', data: {}, occurredAt: 1 })).toThrow();
    expect(() => projectEvents.encode({ id: 'evt_1', projectId: 'prj_1', event: 'email.received', data: { inbox: {} }, occurredAt: 1 })).toThrow();
  });
});
