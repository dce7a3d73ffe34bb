import { createRequire } from 'node:module';

/**
 * kafkajs 2.2.4 keeps a 1 ms timer loop running on every broker connection, busy or idle:
 * `RequestQueue.scheduleCheckPendingRequests` schedules the next check even when nothing is pending,
 * with a negative delay (`throttledUntil` is -1), and each check schedules the next
 * (tulios/kafkajs#1556, fix proposed in #1667, unreleased). With three brokers that is thousands of
 * timer callbacks a second in the edge and the processor (5% of the processor's CPU under load in a
 * profile, and CPU burnt while idle).
 *
 * This replaces the method with one that schedules a check only while requests are pending: when
 * nothing is pending there is nothing to send, a new request either goes out at once or is queued
 * with a check scheduled, and every completed or timed-out request checks the queue itself. With
 * pending requests it keeps kafkajs's behaviour (including #1532's fix for a marginal throttle: a
 * non-positive delay becomes the 10 ms check interval).
 *
 * Installed by kafkajs-runtime.ts. kafkajs is pinned to 2.2.4; if the class or method is not where this
 * expects, nothing is changed.
 */
const require = createRequire(import.meta.url);
const REQUEST_QUEUE_MODULE = 'kafkajs/src/network/requestQueue/index.js';
/** kafkajs's CHECK_PENDING_REQUESTS_INTERVAL. */
const CHECK_PENDING_REQUESTS_INTERVAL_MS = 10;

interface RequestQueueLike {
  pending: unknown[];
  throttledUntil: number;
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  checkPendingRequests(): void;
  scheduleCheckPendingRequests(): void;
}

/** True when kafkajs's request queues schedule checks only while requests are pending. Call only from kafkajs-runtime.ts. */
export function installRequestQueueFix(): boolean {
  try {
    const RequestQueue = require(REQUEST_QUEUE_MODULE) as { prototype: RequestQueueLike };
    if (typeof RequestQueue.prototype?.scheduleCheckPendingRequests !== 'function' || typeof RequestQueue.prototype.checkPendingRequests !== 'function')
      return false;
    RequestQueue.prototype.scheduleCheckPendingRequests = function (this: RequestQueueLike) {
      if (this.throttleCheckTimeoutId || this.pending.length === 0) return;
      const untilUnthrottled = this.throttledUntil - Date.now();
      this.throttleCheckTimeoutId = setTimeout(
        () => {
          this.throttleCheckTimeoutId = null;
          this.checkPendingRequests();
        },
        untilUnthrottled > 0 ? untilUnthrottled : CHECK_PENDING_REQUESTS_INTERVAL_MS,
      );
    };
    return true;
  } catch {
    // Layout changed: kafkajs's own method stays in place.
    return false;
  }
}
