/**
 * Lets the event loop run (sockets, timers, other requests) before the caller goes on. In the single process the
 * edge answers on the same thread the processor's steps run on: a loop over a large batch calls this every few
 * hundred items, so no batch holds the edge's requests for long (issue 29).
 */
export const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Items a loop handles between two yields. */
export const ITEMS_PER_TURN = 256;
