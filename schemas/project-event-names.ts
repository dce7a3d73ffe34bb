/** Outbound project event names (spec §6.1). No zod here: the console's bundle imports this list. */
export const PROJECT_EVENT_NAMES = [
  'user.created',
  'user.deleted',
  'order.created',
  'order.paid',
  'order.refunded',
  'db.row.created',
  'db.row.updated',
  'db.row.deleted',
  'deploy.succeeded',
  'deploy.failed',
  'deploy.degraded',
  'email.received',
  'uptime.down',
  'uptime.up',
  'issue.created',
  'issue.regressed',
  'issue.resolved',
  'issue.escalating',
  'issue.alert',
  'webhook.test',
] as const;
export type ProjectEventName = (typeof PROJECT_EVENT_NAMES)[number];
