import type { Platform } from '../../platform/platform.ts';
import * as errorEvents from '../../schemas/bus/error-events.ts';
import { unprocessableRepository, type UnprocessableEvent } from './repositories/unprocessable-repository.ts';

/**
 * An operator's way back for events set aside as unprocessable (poison-isolation.ts): once the cause is
 * fixed (a store that refused the row, a bug in our code), each kept event is published again on the error
 * topic as a one-event v1 message and leaves the table; the pipeline then takes it like any other (the
 * ledger makes a second replay harmless). One that fails the same way is set aside again, one attempt more.
 */
export async function listUnprocessable(platform: Pick<Platform, 'db'>, opts: { eventIds?: string[]; limit?: number } = {}): Promise<UnprocessableEvent[]> {
  return unprocessableRepository.list(platform.db, opts);
}

export async function replayUnprocessable(
  platform: Pick<Platform, 'bus' | 'db'>,
  opts: { eventIds?: string[]; limit?: number } = {},
): Promise<{ replayed: number }> {
  const kept = await unprocessableRepository.list(platform.db, opts);
  if (!kept.length) return { replayed: 0 };
  // Removed before publishing: the pipeline may take an event as soon as the bus holds it, before publish resolves, and
  // one that fails again is set aside anew. If the publish fails, they are put back. Embedded, the bus's log holds
  // them until the next `npm start` processes them.
  await unprocessableRepository.remove(
    platform.db,
    kept.map((k) => k.eventId),
  );
  try {
    await platform.bus.publish(
      errorEvents.TOPIC,
      kept.map((k) => ({ key: k.projectId, value: k.message })),
    );
  } catch (err) {
    for (const k of kept)
      await unprocessableRepository.setAside(platform.db, { eventId: k.eventId, projectId: k.projectId, message: k.message, error: k.error });
    throw err;
  }
  return { replayed: kept.length };
}
