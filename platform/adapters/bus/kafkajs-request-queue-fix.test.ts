import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { loadKafkajs } from './kafkajs-runtime.ts';

const { replacements } = loadKafkajs();
const require = createRequire(import.meta.url);
const RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as { prototype: { scheduleCheckPendingRequests(this: unknown): void } };

/** The fields scheduleCheckPendingRequests reads, and a count of the checks it schedules. */
function queue(pending: unknown[], throttledUntil = -1) {
  const q = {
    pending,
    throttledUntil,
    throttleCheckTimeoutId: null as NodeJS.Timeout | null,
    checks: 0,
    checkPendingRequests() {
      q.checks++;
    },
  };
  return q;
}

describe('kafkajs request queue: no timer loop while nothing is pending', () => {
  it('schedules nothing for an idle connection (kafkajs 2.2.4 schedules a 1 ms check forever)', async () => {
    expect(replacements.requestQueueFix).toBe(true);
    const q = queue([]);
    RequestQueue.prototype.scheduleCheckPendingRequests.call(q);
    expect(q.throttleCheckTimeoutId).toBeNull();
    await new Promise((r) => setTimeout(r, 20));
    expect(q.checks).toBe(0);
  });

  it('still checks pending requests: after the check interval, or when a throttle ends', async () => {
    const waiting = queue([{}]);
    RequestQueue.prototype.scheduleCheckPendingRequests.call(waiting);
    expect(waiting.throttleCheckTimeoutId).not.toBeNull();
    // A second call while one is scheduled adds none.
    RequestQueue.prototype.scheduleCheckPendingRequests.call(waiting);
    await new Promise((r) => setTimeout(r, 40));
    expect(waiting.checks).toBe(1);
    expect(waiting.throttleCheckTimeoutId).toBeNull();

    const throttled = queue([{}], Date.now() + 80);
    RequestQueue.prototype.scheduleCheckPendingRequests.call(throttled);
    await new Promise((r) => setTimeout(r, 30));
    expect(throttled.checks).toBe(0);
    await new Promise((r) => setTimeout(r, 100));
    expect(throttled.checks).toBe(1);
  });
});
