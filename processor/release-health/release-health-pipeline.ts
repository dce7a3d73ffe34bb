import type { ClientItemsHandler, ClientItemsPlatform } from '../client-items/client-items-consumer.ts';
import { emptySummary } from '../batch-summary.ts';

/** Placeholder while issue 40 is built: replaced by the family's pipeline. */
export function createReleaseHealthHandler(_platform: ClientItemsPlatform): ClientItemsHandler {
  return async () => emptySummary();
}
