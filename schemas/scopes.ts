/**
 * Project API key scopes (spec §5.2). `webhooks:send` is the spec's; the rest are ours.
 * A key reaches only its own project, and only routes whose declared scope it holds.
 */
export const SCOPES = {
  'project:read': 'read the project rollup and settings',
  'errors:read': 'list and read error issues, error settings and alert settings',
  'errors:write': 'resolve, ignore and reopen issues; change error settings and alerts; send test alerts',
  'deploys:read': 'list deploys',
  'deploys:write': 'queue and roll back deploys',
  'webhooks:send': 'fire a webhook.test event (POST .../webhooks/test)',
  'keys:read': "list the project's keys (never their secrets)",
  'analytics:read': 'read analytics: trends, top events, breakdowns and recent events',
  'flags:read': 'list and read feature flags',
  'flags:write': 'create, change and delete feature flags',
  'uptime:read': 'list uptime monitors, their checks and incidents',
  'uptime:write': 'create, change, pause and delete uptime monitors',
  'sourcemaps:write': "upload source maps (sentry-cli's artifact bundles, cx sourcemaps upload)",
} as const;
export type Scope = keyof typeof SCOPES;
export const ALL_SCOPES = Object.keys(SCOPES) as Scope[];

/** Token prefixes (spec §5.1, §2.4, §2.1). Every token is 256 random bits behind its prefix. */
export const TOKEN_PREFIX = {
  liveKey: 'cx_live_',
  testKey: 'cx_test_',
  ingestKey: 'cak_live_',
  cliToken: 'cx_cli_',
  mcpToken: 'cxm_',
  mcpRefresh: 'cxr_',
  oauthCode: 'cxc_',
  deployHook: 'cxhook_',
  webhookSecret: 'whsec_',
  session: 'cxs_',
} as const;
