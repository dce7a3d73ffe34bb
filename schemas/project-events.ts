import { z } from 'zod';

/**
 * Outbound project event names (spec §6.1) and the one producer contract for them: any part of
 * the platform publishes a ProjectEvent to TOPICS.projectEvents (see processor/webhooks) and the
 * webhook fan-out delivers it to every subscribed endpoint.
 */
import { LIMITS } from './limits.ts';
import { PROJECT_EVENT_NAMES, type ProjectEventName } from './project-event-names.ts';

export { PROJECT_EVENT_NAMES, type ProjectEventName };
/** `data` of deploy.degraded (issue 41's guarded rollout): schemas/guarded-rollout.ts. */
export { DeployDegradedDataSchema, type DeployDegradedData } from './guarded-rollout.ts';

/** `data` of email.received (spec §6.2), as processor/inbound/email/received-mail.ts builds it. */
export const EmailReceivedDataSchema = z.object({
  inbox: z.object({ id: z.string(), address: z.string() }).passthrough(),
  thread: z.object({ id: z.string(), subject: z.string().optional(), messageCount: z.number().optional() }).passthrough(),
  message: z.object({
    id: z.string().optional().describe('`msg_...`, the stored message'),
    from: z.string(),
    fromName: z.string().nullable().optional(),
    to: z.array(z.string()),
    subject: z.string(),
    text: z.string().nullable().optional(),
    html: z.string().nullable().optional(),
    truncated: z.boolean().describe('text or html was cut at its cap; the .eml holds the whole message'),
    attachments: z.array(
      z
        .object({
          filename: z.string(),
          contentType: z.string(),
          size: z.number(),
          contentId: z.string().nullable().optional(),
          inline: z.boolean().optional(),
          checksum: z.string().optional().describe('MD5 of the content, hex'),
        })
        .passthrough(),
    ),
    senderAuthenticated: z.boolean().describe('a DKIM signature verified and its domain aligns with the From domain'),
    rfcMessageId: z.string().nullable().optional(),
    rawKey: z.string(),
  }),
});
export type EmailReceivedData = z.infer<typeof EmailReceivedDataSchema>;

/** email.received's `rawKey`: the stored .eml of a message, served by `GET /v1/projects/:slug/email/inboxes/:id/messages/:messageId/raw`. */
export const rawKeyOf = (inboxId: string, messageId: string) => `inboxes/${inboxId}/messages/${messageId}.eml`;

/**
 * `data` of issue.created, issue.regressed, issue.resolved and issue.escalating (issue 41), as domain/issue-events/issue-events.ts builds
 * it: the issue as it stands once the change is stored.
 */
export const IssueEventDataSchema = z.object({
  issue: z.object({
    id: z.string().describe('the issue (error group) id (the errors API groupId)'),
    title: z.string().describe('`<name>: <message>`, at most 500 characters'),
    culprit: z.string().nullable().describe('the first in-app frame (function at file:line); null when the stack has none'),
    status: z.string(),
    count: z.number().describe('events in all'),
    environmentCounts: z.record(z.string(), z.number()).describe('events per environment'),
    regressionCount: z.number(),
    firstSeen: z.string(),
    lastSeen: z.string(),
  }),
  environment: z
    .string()
    .nullable()
    .describe("created/regressed: the environment of this batch's events of the issue (production when any was); resolved: null"),
  deploy: z
    .object({ id: z.string(), gitSha: z.string().nullable(), branch: z.string().nullable() })
    .nullable()
    .describe('the deploy the issue was first seen in (created), regressed in (regressed) or last seen in (resolved), when known'),
  project: z.object({ id: z.string(), slug: z.string(), name: z.string() }),
  url: z.string().describe("the issue's console page, from PUBLIC_BASE_URL"),
  escalation: z
    .object({
      since: z.string().describe('when the sweep saw it escalate'),
      lastHourCount: z.number().describe('events in the hour before `since`'),
      baselinePerHour: z.number().describe('its average hourly events over the 7 days before that hour (the hours it existed)'),
      multiple: z.number().describe('how many times its baseline the last hour had to be above (3 by default)'),
      unignored: z.boolean().describe('it was ignored until escalating and is unresolved again'),
    })
    .optional()
    .describe('issue.escalating only: the evidence'),
});
export type IssueEventData = z.infer<typeof IssueEventDataSchema>;

export const ProjectEventSchema = z.object({
  /** Unique id of the event; deliveries derive from it, so re-publishing it does not send twice. */
  id: z.string(),
  projectId: z.string(),
  event: z.enum(PROJECT_EVENT_NAMES),
  data: z.record(z.string(), z.unknown()),
  occurredAt: z.number(),
  /** Set for an inbox's own webhookUrl (§6.2): delivered only to that inbox's target, signed with its secret, never to project endpoints. */
  inboxId: z.string().optional(),
  /**
   * Set by an alert rule (issue 41, issue.alert): delivered only to these endpoints of the project (the rule chose them,
   * whatever they subscribe to), signed, retried and in each endpoint's format like any delivery.
   */
  endpointIds: z.array(z.string()).max(LIMITS.alertRules.endpoints).optional(),
});
export type ProjectEvent = z.infer<typeof ProjectEventSchema>;

/**
 * Event-name patterns an endpoint may subscribe to: an exact name, or a family with a trailing `*`
 * (`deploy.*`, `db.row.*`, `db.*`) that names at least one known event. `*` alone is refused: an
 * empty list already means "everything except email.received" (§6.1).
 */
export function isKnownEventPattern(pattern: string): boolean {
  if ((PROJECT_EVENT_NAMES as readonly string[]).includes(pattern)) return true;
  if (!/^[a-z]+(\.[a-z]+)*\.\*$/.test(pattern)) return false;
  const prefix = pattern.slice(0, -1);
  return PROJECT_EVENT_NAMES.some((n) => n.startsWith(prefix));
}

/**
 * Subscription rules (§6.1): an empty list receives every event except `email.received`; a
 * trailing `*` subscribes to a family; `email.received` needs its own name or `email.*`.
 */
export function subscriptionMatches(patterns: readonly string[], event: string): boolean {
  if (!patterns.length) return event !== 'email.received';
  return patterns.some((p) => {
    if (p === event) return true;
    if (!p.endsWith('.*')) return false;
    return event.startsWith(p.slice(0, -1));
  });
}
