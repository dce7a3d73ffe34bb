import { EmailReceivedDataSchema, ProjectEventSchema, type ProjectEvent } from '../project-events.ts';
import { TOPICS } from '../topics.ts';

/** Outbound project events (spec §6.1, key projectId): any part of the platform publishes; the webhook fan-out consumes. */
export const TOPIC = TOPICS.projectEvents;

export type { ProjectEvent };

/** Checked before it is written: an event the fan-out would drop is refused at its producer instead. */
export function encode(e: ProjectEvent): Buffer {
  const full = ProjectEventSchema.parse(e);
  if (full.event === 'email.received') EmailReceivedDataSchema.parse(full.data);
  return Buffer.from(JSON.stringify(full));
}

export function decode(value: Buffer): ProjectEvent | undefined {
  try {
    const r = ProjectEventSchema.safeParse(JSON.parse(value.toString('utf8')));
    return r.success ? r.data : undefined;
  } catch {
    return undefined;
  }
}
