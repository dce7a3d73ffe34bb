/** Bus topic names. The one list every role uses. */
export const TOPICS = {
  /** Stamped error-event batches from the edge (key: projectId). */
  errorEvents: 'errors.events.v1',
  /** Stamped analytics-event batches from the edge (key: projectId). See schemas/analytics-event.ts. */
  analyticsEvents: 'analytics.events.v1',
  /** Project events that fan out to webhooks (key: projectId). See schemas/project-events.ts. */
  projectEvents: 'project.events.v1',
  /** Deploys waiting for a builder (key: deployId). See schemas/deploys.ts. */
  deployRequests: 'deploys.requested.v1',
  /** Verified deliveries of the inbound provider webhooks (key: provider + delivery id). See schemas/bus/inbound-events.ts. */
  inboundEvents: 'inbound.events.v1',
  /** What SDKs send beside errors: sessions, feedback, cron check-ins (key: projectId). See schemas/bus/client-items.ts. */
  clientItems: 'client.items.v1',
} as const;

/** Consumer group ids. */
export const CONSUMER_GROUPS = {
  errorPipeline: 'processor-errors',
  analyticsPipeline: 'processor-analytics',
  webhookFanout: 'processor-webhooks',
  builder: 'builder-deploys',
  inboundPipeline: 'processor-inbound',
  clientItems: 'processor-client-items',
  /** Mail of incident and maintenance events to status page subscribers (issue 43; the project events topic). */
  statusSubscriberMail: 'processor-status-subscribers',
} as const;
