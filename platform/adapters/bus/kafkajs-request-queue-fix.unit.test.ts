import { createRequire } from 'node:module';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
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
  // The queue's timers and Date.now() under the test's clock.
  beforeEach(() => vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] }));
  afterEach(() => vi.useRealTimers());

  it('schedules nothing for an idle connection (kafkajs 2.2.4 schedules a 1 ms check forever)', async () => {
    expect(replacements.requestQueueFix).toBe(true);
    const q = queue([]);
    RequestQueue.prototype.scheduleCheckPendingRequests.call(q);
    expect(q.throttleCheckTimeoutId).toBeNull();
    vi.advanceTimersByTime(1_000);
    expect(q.checks).toBe(0);
  });

  it('still checks pending requests: after the check interval, or when a throttle ends', async () => {
    const waiting = queue([{}]);
    RequestQueue.prototype.scheduleCheckPendingRequests.call(waiting);
    expect(waiting.throttleCheckTimeoutId).not.toBeNull();
    // A second call while one is scheduled adds none.
    RequestQueue.prototype.scheduleCheckPendingRequests.call(waiting);
    vi.advanceTimersByTime(9);
    expect(waiting.checks).toBe(0);
    vi.advanceTimersByTime(1);
    expect(waiting.checks).toBe(1);
    expect(waiting.throttleCheckTimeoutId).toBeNull();

    const throttled = queue([{}], Date.now() + 80);
    RequestQueue.prototype.scheduleCheckPendingRequests.call(throttled);
    vi.advanceTimersByTime(79);
    expect(throttled.checks).toBe(0);
    vi.advanceTimersByTime(1);
    expect(throttled.checks).toBe(1);
  });
});
