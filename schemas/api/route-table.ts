/**
 * The route table: every route of the control API, once, by id: its method and path. The API registers each route
 * from its id (api/declared-route.ts), the console, the CLI and the MCP tools call it by id through the one typed
 * client (schemas/api/client.ts), so a path changes here and nowhere else. The architecture test forbids a literal
 * `/v1/` path outside this file.
 *
 * What each route takes and answers (params, query, body, answers by status, summary) is declared by the family's
 * module (`schemas/api/<family>.ts`, its `<family>Routes` object, keyed by these ids) and gathered in
 * schemas/api/route-shapes.ts. This table holds no zod, so a browser bundle (the console, the SDK) can import it as a
 * value and carries no validator.
 */
export type HttpMethod = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
export interface RouteLine {
  readonly method: HttpMethod;
  readonly path: string;
}

export const ROUTES = {
  // meta
  apiIndex: { method: 'GET', path: '/v1/' },
  openApiDocument: { method: 'GET', path: '/v1/openapi.json' },
  // accounts: console sessions
  signIn: { method: 'POST', path: '/v1/auth/sign-in' },
  signOut: { method: 'POST', path: '/v1/auth/sign-out' },
  me: { method: 'GET', path: '/v1/auth/me' },
  // projects
  createProject: { method: 'POST', path: '/v1/projects' },
  listProjects: { method: 'GET', path: '/v1/projects' },
  getProject: { method: 'GET', path: '/v1/projects/:slug' },
  updateProject: { method: 'PATCH', path: '/v1/projects/:slug' },
  /** Share links of protected previews (issue 42). */
  createPreviewLink: { method: 'POST', path: '/v1/projects/:slug/preview-links' },
  listPreviewLinks: { method: 'GET', path: '/v1/projects/:slug/preview-links' },
  revokePreviewLink: { method: 'DELETE', path: '/v1/projects/:slug/preview-links/:id' },
  // custom domains
  listDomains: { method: 'GET', path: '/v1/projects/:slug/domains' },
  addDomain: { method: 'POST', path: '/v1/projects/:slug/domains' },
  verifyDomain: { method: 'POST', path: '/v1/projects/:slug/domains/:domain/verify' },
  removeDomain: { method: 'DELETE', path: '/v1/projects/:slug/domains/:domain' },
  // keys
  createKey: { method: 'POST', path: '/v1/projects/:slug/keys' },
  listKeys: { method: 'GET', path: '/v1/projects/:slug/keys' },
  revokeKey: { method: 'DELETE', path: '/v1/projects/:slug/keys/:id' },
  // CLI login and tokens
  startDeviceLogin: { method: 'POST', path: '/v1/cli/device' },
  getDeviceLogin: { method: 'GET', path: '/v1/cli/device' },
  approveDeviceLogin: { method: 'POST', path: '/v1/cli/device/approve' },
  pollDeviceToken: { method: 'POST', path: '/v1/cli/device/token' },
  whoami: { method: 'GET', path: '/v1/cli/whoami' },
  listCliTokens: { method: 'GET', path: '/v1/cli/tokens' },
  revokeCliToken: { method: 'DELETE', path: '/v1/cli/tokens/:id' },
  // errors: issues, settings, alerts
  listIssues: { method: 'GET', path: '/v1/projects/:slug/errors' },
  getErrorSettings: { method: 'GET', path: '/v1/projects/:slug/errors/settings' },
  updateErrorSettings: { method: 'PATCH', path: '/v1/projects/:slug/errors/settings' },
  getIssue: { method: 'GET', path: '/v1/projects/:slug/errors/:groupId' },
  getIssueTags: { method: 'GET', path: '/v1/projects/:slug/errors/:groupId/tags' },
  /** A deploy's issues: introduced and regressed in it (issue 41). */
  listDeployIssues: { method: 'GET', path: '/v1/projects/:slug/deploys/:deployId/issues' },
  resolveIssue: { method: 'POST', path: '/v1/projects/:slug/errors/:groupId/resolve' },
  ignoreIssue: { method: 'POST', path: '/v1/projects/:slug/errors/:groupId/ignore' },
  reopenIssue: { method: 'POST', path: '/v1/projects/:slug/errors/:groupId/reopen' },
  bulkIssues: { method: 'POST', path: '/v1/projects/:slug/errors/bulk' },
  /** Merge issues into this one (issue 41). */
  mergeIssues: { method: 'POST', path: '/v1/projects/:slug/errors/:groupId/merge' },
  getErrorAlerts: { method: 'GET', path: '/v1/projects/:slug/error-alerts' },
  updateErrorAlerts: { method: 'PATCH', path: '/v1/projects/:slug/error-alerts' },
  testErrorAlert: { method: 'POST', path: '/v1/projects/:slug/error-alerts/test' },
  /** Alert rules per project (issue 41). */
  listAlertRules: { method: 'GET', path: '/v1/projects/:slug/alerts/rules' },
  createAlertRule: { method: 'POST', path: '/v1/projects/:slug/alerts/rules' },
  getAlertRule: { method: 'GET', path: '/v1/projects/:slug/alerts/rules/:ruleId' },
  updateAlertRule: { method: 'PATCH', path: '/v1/projects/:slug/alerts/rules/:ruleId' },
  deleteAlertRule: { method: 'DELETE', path: '/v1/projects/:slug/alerts/rules/:ruleId' },
  // user feedback (issue 40)
  listFeedback: { method: 'GET', path: '/v1/projects/:slug/feedback' },
  listIssueFeedback: { method: 'GET', path: '/v1/projects/:slug/errors/:groupId/feedback' },
  // release health: sessions per deploy
  getReleaseHealth: { method: 'GET', path: '/v1/projects/:slug/release-health' },
  getDeployHealth: { method: 'GET', path: '/v1/projects/:slug/deploys/:deployId/health' },
  // outbound webhooks
  createWebhookEndpoint: { method: 'POST', path: '/v1/projects/:slug/webhooks' },
  listWebhookEndpoints: { method: 'GET', path: '/v1/projects/:slug/webhooks' },
  sendTestWebhook: { method: 'POST', path: '/v1/projects/:slug/webhooks/test' },
  getWebhookEndpoint: { method: 'GET', path: '/v1/projects/:slug/webhooks/:id' },
  updateWebhookEndpoint: { method: 'PATCH', path: '/v1/projects/:slug/webhooks/:id' },
  deleteWebhookEndpoint: { method: 'DELETE', path: '/v1/projects/:slug/webhooks/:id' },
  listWebhookAttempts: { method: 'GET', path: '/v1/projects/:slug/webhooks/:id/deliveries' },
  replayWebhookDelivery: { method: 'POST', path: '/v1/projects/:slug/webhooks/deliveries/:id/replay' },
  rotateWebhookSecret: { method: 'POST', path: '/v1/projects/:slug/webhooks/:id/rotate-secret' },
  // deploys, deploy hooks, logs
  getDeploySettings: { method: 'GET', path: '/v1/projects/:slug/deploys/settings' },
  updateDeploySettings: { method: 'PATCH', path: '/v1/projects/:slug/deploys/settings' },
  queueDeploy: { method: 'POST', path: '/v1/projects/:slug/deploys' },
  /** A built directory uploaded as a .tar.gz becomes a deploy, no build run (issue 42, `cx deploy --prebuilt`). */
  deployPrebuilt: { method: 'POST', path: '/v1/projects/:slug/deploys/prebuilt' },
  listDeploys: { method: 'GET', path: '/v1/projects/:slug/deploys' },
  createDeployHook: { method: 'POST', path: '/v1/projects/:slug/deploys/hooks' },
  listDeployHooks: { method: 'GET', path: '/v1/projects/:slug/deploys/hooks' },
  deleteDeployHook: { method: 'DELETE', path: '/v1/projects/:slug/deploys/hooks/:id' },
  /** The project's build cache (issue 42): node_modules and package-manager caches, every branch's, cleared. */
  clearBuildCache: { method: 'DELETE', path: '/v1/projects/:slug/deploys/cache' },
  /** Build variables per environment (issue 42). */
  listEnvVars: { method: 'GET', path: '/v1/projects/:slug/env' },
  createEnvVar: { method: 'POST', path: '/v1/projects/:slug/env' },
  updateEnvVar: { method: 'PATCH', path: '/v1/projects/:slug/env/:id' },
  deleteEnvVar: { method: 'DELETE', path: '/v1/projects/:slug/env/:id' },
  getDeployLogs: { method: 'GET', path: '/v1/projects/:slug/deploys/:deployId/logs' },
  getDeployLogShare: { method: 'GET', path: '/v1/projects/:slug/deploys/:deployId/share' },
  revokeDeployLogShare: { method: 'DELETE', path: '/v1/projects/:slug/deploys/:deployId/share' },
  cancelDeploy: { method: 'POST', path: '/v1/projects/:slug/deploys/:deployId/cancel' },
  rollbackDeploy: { method: 'POST', path: '/v1/projects/:slug/deploys/:deployId/rollback' },
  listDeploySourceMaps: { method: 'GET', path: '/v1/projects/:slug/deploys/:deployId/sourcemaps' },
  /** Suspect commits (issue 41): a deploy's commits, and those of an issue's deploy that touched its file. */
  listDeployCommits: { method: 'GET', path: '/v1/projects/:slug/deploys/:deployId/commits' },
  getIssueSuspectCommits: { method: 'GET', path: '/v1/projects/:slug/errors/:groupId/suspect-commits' },
  getDeploy: { method: 'GET', path: '/v1/projects/:slug/deploys/:deployId' },
  triggerDeployHook: { method: 'POST', path: '/v1/hooks/:token' },
  getSharedDeployLog: { method: 'GET', path: '/v1/deploy-logs/:slug/:deployId' },
  // analytics
  analyticsTrends: { method: 'GET', path: '/v1/projects/:slug/analytics/trends' },
  analyticsTopEvents: { method: 'GET', path: '/v1/projects/:slug/analytics/top-events' },
  analyticsBreakdown: { method: 'GET', path: '/v1/projects/:slug/analytics/breakdown' },
  analyticsEvents: { method: 'GET', path: '/v1/projects/:slug/analytics/events' },
  // feature flags
  listFlags: { method: 'GET', path: '/v1/projects/:slug/flags' },
  createFlag: { method: 'POST', path: '/v1/projects/:slug/flags' },
  getFlag: { method: 'GET', path: '/v1/projects/:slug/flags/:key' },
  updateFlag: { method: 'PATCH', path: '/v1/projects/:slug/flags/:key' },
  deleteFlag: { method: 'DELETE', path: '/v1/projects/:slug/flags/:key' },
  flagDefinitions: { method: 'GET', path: '/flags/definitions' },
  posthogLocalEvaluation: { method: 'GET', path: '/api/feature_flag/local_evaluation' },
  // inbound provider webhooks
  inboundCodeHost: { method: 'POST', path: '/v1/webhooks/code_host' },
  inboundPayments: { method: 'POST', path: '/v1/webhooks/payments' },
  inboundPaymentsConnect: { method: 'POST', path: '/v1/webhooks/payments/connect' },
  inboundEmail: { method: 'POST', path: '/v1/webhooks/email' },
  inboundHealth: { method: 'GET', path: '/v1/webhooks/health' },
  // code-host integration (GitHub App)
  connectGithub: { method: 'POST', path: '/v1/integrations/github' },
  listGithubRepositories: { method: 'GET', path: '/v1/integrations/github' },
  githubCallback: { method: 'GET', path: '/v1/integrations/github/callback' },
  disconnectGithub: { method: 'DELETE', path: '/v1/integrations/github/:id' },
  /** A project's GitHub settings (issue 41): whether new errors fail a preview's commit status. */
  getGithubSettings: { method: 'GET', path: '/v1/projects/:slug/github/settings' },
  updateGithubSettings: { method: 'PATCH', path: '/v1/projects/:slug/github/settings' },
  // payments (Stripe Connect) and billing
  connectPayments: { method: 'POST', path: '/v1/projects/:slug/payments/connect' },
  paymentsCallback: { method: 'GET', path: '/v1/payments/connect/callback' },
  addPaymentAccount: { method: 'POST', path: '/v1/projects/:slug/payments' },
  listPaymentAccounts: { method: 'GET', path: '/v1/projects/:slug/payments' },
  disconnectPaymentAccount: { method: 'DELETE', path: '/v1/projects/:slug/payments/:accountId' },
  billing: { method: 'GET', path: '/v1/billing' },
  // mailbox inboxes
  createInbox: { method: 'POST', path: '/v1/projects/:slug/email/inboxes' },
  listInboxes: { method: 'GET', path: '/v1/projects/:slug/email/inboxes' },
  deleteInbox: { method: 'DELETE', path: '/v1/projects/:slug/email/inboxes/:id' },
  listInboxMessages: { method: 'GET', path: '/v1/projects/:slug/email/inboxes/:id/messages' },
  getRawInboxMessage: { method: 'GET', path: '/v1/projects/:slug/email/inboxes/:id/messages/:messageId/raw' },
  // status page subscribers (issue 43): public sign-up, confirm and unsubscribe; the project's list and webhook subscribers
  subscribeToStatus: { method: 'POST', path: '/v1/status/:slug/subscribers' },
  confirmStatusSubscription: { method: 'GET', path: '/v1/status/:slug/subscribers/confirm' },
  statusUnsubscribePage: { method: 'GET', path: '/v1/status/:slug/unsubscribe' },
  statusUnsubscribe: { method: 'POST', path: '/v1/status/:slug/unsubscribe' },
  listStatusSubscribers: { method: 'GET', path: '/v1/projects/:slug/uptime/subscribers' },
  createStatusWebhookSubscriber: { method: 'POST', path: '/v1/projects/:slug/uptime/subscribers' },
  deleteStatusSubscriber: { method: 'DELETE', path: '/v1/projects/:slug/uptime/subscribers/:subscriberId' },
  // uptime and status
  listMonitors: { method: 'GET', path: '/v1/projects/:slug/uptime' },
  createMonitor: { method: 'POST', path: '/v1/projects/:slug/uptime' },
  getUptimeSettings: { method: 'GET', path: '/v1/projects/:slug/uptime/settings' },
  updateUptimeSettings: { method: 'PATCH', path: '/v1/projects/:slug/uptime/settings' },
  listIncidents: { method: 'GET', path: '/v1/projects/:slug/uptime/incidents' },
  getMonitor: { method: 'GET', path: '/v1/projects/:slug/uptime/:id' },
  updateMonitor: { method: 'PATCH', path: '/v1/projects/:slug/uptime/:id' },
  deleteMonitor: { method: 'DELETE', path: '/v1/projects/:slug/uptime/:id' },
  listMonitorChecks: { method: 'GET', path: '/v1/projects/:slug/uptime/:id/checks' },
  listMonitorCheckIns: { method: 'GET', path: '/v1/projects/:slug/uptime/:id/check-ins' },
  publicStatus: { method: 'GET', path: '/v1/status/:slug' },
  /** Incidents and maintenance people write for the status page (issue 43). */
  createStatusIncident: { method: 'POST', path: '/v1/projects/:slug/uptime/incidents' },
  getStatusIncident: { method: 'GET', path: '/v1/projects/:slug/uptime/incidents/:incidentId' },
  updateStatusIncident: { method: 'PATCH', path: '/v1/projects/:slug/uptime/incidents/:incidentId' },
  addStatusIncidentUpdate: { method: 'POST', path: '/v1/projects/:slug/uptime/incidents/:incidentId/updates' },
  listMaintenance: { method: 'GET', path: '/v1/projects/:slug/uptime/maintenance' },
  scheduleMaintenance: { method: 'POST', path: '/v1/projects/:slug/uptime/maintenance' },
  updateMaintenance: { method: 'PATCH', path: '/v1/projects/:slug/uptime/maintenance/:maintenanceId' },
  cancelMaintenance: { method: 'DELETE', path: '/v1/projects/:slug/uptime/maintenance/:maintenanceId' },
  /** The status page people read (issue 43): HTML, a README badge, an Atom feed of incidents and maintenance. */
  statusPage: { method: 'GET', path: '/status/:slug' },
  statusBadge: { method: 'GET', path: '/v1/status/:slug/badge.svg' },
  statusFeed: { method: 'GET', path: '/v1/status/:slug/feed.atom' },
  // MCP and its OAuth
  mcpResourceMetadata: { method: 'GET', path: '/.well-known/oauth-protected-resource/v1/mcp' },
  mcpPost: { method: 'POST', path: '/v1/mcp' },
  mcpGet: { method: 'GET', path: '/v1/mcp' },
  mcpDelete: { method: 'DELETE', path: '/v1/mcp' },
  oauthServerMetadata: { method: 'GET', path: '/.well-known/oauth-authorization-server' },
  oauthRegister: { method: 'POST', path: '/v1/oauth/register' },
  oauthAuthorizeInfo: { method: 'GET', path: '/v1/oauth/authorize' },
  oauthApprove: { method: 'POST', path: '/v1/oauth/authorize' },
  oauthToken: { method: 'POST', path: '/v1/oauth/token' },
  oauthRevoke: { method: 'POST', path: '/v1/oauth/revoke' },
  listOauthTokens: { method: 'GET', path: '/v1/oauth/tokens' },
  revokeOauthToken: { method: 'DELETE', path: '/v1/oauth/tokens/:id' },
  // sentry-cli's source-map upload
  chunkUploadOptions: { method: 'GET', path: '/api/0/organizations/:org/chunk-upload/' },
  uploadChunks: { method: 'POST', path: '/api/0/organizations/:org/chunk-upload/' },
  assembleArtifactBundle: { method: 'POST', path: '/api/0/organizations/:org/artifactbundle/assemble/' },
} as const satisfies Record<string, RouteLine>;

export type RouteId = keyof typeof ROUTES;

/**
 * Where the ingest edge (ingest/, uWebSockets.js) serves each route (`:name` is a path parameter): the SDKs post
 * here, the edge registers from it, and its OpenAPI half (api/meta/edge-openapi.ts) is made from it.
 */
export const EDGE_PATHS = {
  errors: '/v1/errors/i',
  /** The same, on a site's own host: cx.js posts here and the edge attaches the project's ingest key (§7.1). */
  siteErrors: '/service/v1/errors/i',
  analytics: '/v1/analytics/i',
  siteAnalytics: '/service/v1/analytics/i',
  flags: '/v1/flags/i',
  siteFlags: '/service/v1/flags/i',
  /** Session updates of release health (issue 40): cx.js's own cheap path, beside Sentry's session items. */
  sessions: '/v1/sessions/i',
  siteSessions: '/service/v1/sessions/i',
  sentryEnvelope: '/api/:projectId/envelope/',
  sentryStore: '/api/:projectId/store/',
  /** Sentry's HTTP cron check-ins (issue 40): `?status=in_progress|ok|error`, GET or POST (ingest/sentry/sentry-cron-route.ts). */
  sentryCron: '/api/:projectId/cron/:monitorSlug/:sentryKey/',
  widget: '/v1/w/cx.js',
  /** cx.js's sessions add-on (issue 40): loaded after cx.js, one session per page load (sdk/browser/cx-sessions.ts). */
  widgetSessions: '/v1/w/cx-sessions.js',
  /** PostHog's SDKs unchanged (ingest/posthog/): capture, flags, and posthog-js's remote config. */
  posthogBatch: '/batch/',
  posthogEvents: '/e/',
  posthogEventsV0: '/i/v0/e/',
  posthogCapture: '/capture/',
  posthogFlags: '/flags/',
  posthogDecide: '/decide/',
  posthogConfig: '/array/:token/config',
  /** posthog-js's own files (ingest/posthog/posthog-assets.ts): the remote config as a script, and its `/static/` files. */
  posthogConfigScript: '/array/:token/config.js',
  posthogStatic: '/static/:file',
  posthogStaticVersioned: '/static/:version/:file',
} as const;

/** The edge's other paths: each ingest route's counters (no tenant data), and where the browser client's files live. */
export const EDGE_SUPPORT_PATHS = {
  errorsHealth: '/v1/errors/i/health',
  analyticsHealth: '/v1/analytics/i/health',
  flagsHealth: '/v1/flags/i/health',
  sessionsHealth: '/v1/sessions/i/health',
  /** Every file of the browser client, versioned names and the manifest included. */
  widgetPrefix: '/v1/w/',
} as const;
