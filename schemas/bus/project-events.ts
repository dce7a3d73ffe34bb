import { EmailReceivedDataSchema, ProjectEventSchema, type ProjectEvent } from '../project-events.ts';
import { TOPICS } from '../topics.ts';
import { jsonCodec } from './json-codec.ts';

/** Outbound project events (spec §6.1, key projectId): any part of the platform publishes; the webhook fan-out consumes. */
export const TOPIC = TOPICS.projectEvents;

export type { ProjectEvent };

/** An email.received event carries the mailbox payload of §6.2, checked as the event is written. */
const ProjectEventMessage = ProjectEventSchema.superRefine((e, ctx) => {
  if (e.event !== 'email.received') return;
  const data = EmailReceivedDataSchema.safeParse(e.data);
  if (!data.success) for (const issue of data.error.issues) ctx.addIssue({ code: 'custom', path: ['data', ...issue.path], message: issue.message });
});

export const { encode, decode } = jsonCodec(ProjectEventMessage);
