import { z } from 'zod';
import { ENVIRONMENTS } from '../error-event.ts';
import { ERROR_LEVELS } from '../error-context.ts';
import { hostPatternSchema } from '../host-pattern.ts';
import { LIMITS } from '../limits.ts';
import { UNRESOLVED_REASONS } from '../symbolicated-frame.ts';
import { errorAnswers, pageOf, SlugParams } from './common.ts';
import { routeShapes } from './route-shape.ts';

/** Error tracking (spec §4.5): the issue inbox, its transitions (§3.1), error settings (§2.7) and alert settings (§2.8). */
/** `resolving` (issue 41): resolved in next deploy, open until a production deploy newer than the one live when it was marked goes live. */
export const IssueStatusSchema = z.enum(['unresolved', 'resolved', 'ignored', 'resolving']);
export type IssueStatus = z.infer<typeof IssueStatusSchema>;
/** Why an ignored issue came back by itself (issue 41): the condition it was ignored until. */
export const UNIGNORE_REASONS = ['events', 'users', 'time', 'escalating'] as const;
export type UnignoreReason = (typeof UNIGNORE_REASONS)[number];

export const GroupParams = z.object({ slug: z.string(), groupId: z.string().max(64) });

export const IssueSummarySchema = z.object({
  groupId: z.string().describe("the issue's id (§2.6), `grp_...`: what the `:groupId` routes take"),
  id: z.string().describe('the same as groupId'),
  name: z.string(),
  message: z.string().describe("the latest occurrence's message (scrubbed)"),
  status: IssueStatusSchema,
  count: z.number().int(),
  envCounts: z.record(z.string(), z.number().int()).describe('occurrences per environment'),
  firstSeen: z.string(),
  lastSeen: z.string(),
  regressionCount: z.number().int(),
  culprit: z.string().nullable().describe('first in-app stack frame'),
  suggestion: z.string().nullable().describe('first thing to check: a hint, not a diagnosis'),
});
export type IssueSummary = z.infer<typeof IssueSummarySchema>;

/**
 * One stack frame after symbolication (issue 37): the frame as the client sent it, its original position when a source
 * map resolved it, context lines from the map's `sourcesContent`, and which map resolved it or why none did. The same
 * shape as schemas/symbolicated-frame.ts (api/errors/errors-repository.ts checks the two agree).
 */
const FramePositionSchema = z.object({
  fn: z.string().describe("function name ('' when anonymous)"),
  file: z.string(),
  line: z.number().int().optional(),
  col: z.number().int().optional(),
});
export const UnresolvedReasonSchema = z
  .enum(UNRESOLVED_REASONS)
  .describe(
    'not_a_url: the file is no URL a site serves; no_map: no kept map for this file; map_refused: its map could not be read; line_out_of_range: the map has no mapping there; busy: the processor spent its batch budget of map parsing',
  );
export type UnresolvedReason = z.infer<typeof UnresolvedReasonSchema>;
export const SymbolicatedFrameSchema = z.object({
  minified: FramePositionSchema.describe('the frame as the client sent it'),
  original: FramePositionSchema.optional().describe('the original source position, when a map resolved the frame'),
  context: z
    .object({
      firstLine: z.number().int().describe('line number (1-based) of lines[0]'),
      lines: z.array(z.string()),
      errorIndex: z.number().int().describe('index in lines of the failing line'),
    })
    .optional()
    .describe("source lines around the original line, from the map's sourcesContent"),
  inApp: z.boolean().describe("the app's own code (decided on the original path when resolved: node_modules/ is a library)"),
  resolution: z.discriminatedUnion('status', [
    z.object({
      status: z.literal('resolved'),
      match: z.enum(['debug_id', 'deploy', 'path']).describe("how the map was found: the event's debug id, the deploy that served the file, its served path"),
      deployId: z.string().nullable().describe('the deploy whose build kept the map; null for an uploaded map'),
      bundleId: z.string().optional().describe("the upload's bundle, for an uploaded map"),
      mapName: z.string().describe("the map's path in the build output or bundle"),
      debugId: z.string().optional(),
    }),
    z.object({ status: z.literal('unresolved'), reason: UnresolvedReasonSchema }),
  ]),
});
export type SymbolicatedFrame = z.infer<typeof SymbolicatedFrameSchema>;

/** The context an occurrence was sent with (issue 40, schemas/error-context.ts), scrubbed. */
const ContextTableSchema = z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()]));
export const BreadcrumbSchema = z.object({
  timestamp: z.number().describe('epoch ms'),
  type: z.string().optional(),
  category: z.string().optional().describe('ui.click, navigation, fetch, xhr, console, http, ...'),
  level: z.enum(ERROR_LEVELS).optional(),
  message: z.string().optional(),
  data: ContextTableSchema.optional(),
});
export const EventContextSchema = z.object({
  breadcrumbs: z.array(BreadcrumbSchema).optional().describe("oldest first, the newest 100; on a batch's newest sample only"),
  level: z.enum(ERROR_LEVELS).optional(),
  tags: z.record(z.string(), z.string()).optional().describe("the event's own tags"),
  contexts: z
    .record(z.string(), ContextTableSchema)
    .optional()
    .describe("browser, os, device, runtime, app, ...: the SDK's, with browser/os/device from the User-Agent where it sent none"),
  request: z.object({ url: z.string().optional(), method: z.string().optional(), headers: z.record(z.string(), z.string()).optional() }).optional(),
  user: z.object({ id: z.string().optional(), email: z.string().optional(), ipAddress: z.string().optional(), username: z.string().optional() }).optional(),
  release: z.string().optional(),
  dist: z.string().optional(),
  serverName: z.string().optional(),
  sdk: z.object({ name: z.string(), version: z.string().optional() }).optional(),
  clientEnvironment: z.string().optional().describe("the SDK's own environment name; the issue's environment is the server's (§7.4)"),
});

/** A deploy an issue names (issue 41). */
export const IssueDeployRefSchema = z.object({ id: z.string(), gitSha: z.string().nullable(), createdAt: z.string() });
export type IssueDeployRef = z.infer<typeof IssueDeployRefSchema>;

/** An issue merged into another (issue 41): its id and fingerprint (later events of it land in the target), and when. */
export const MergedFromSchema = z.object({ groupId: z.string(), fingerprint: z.string(), mergedAt: z.string() });
export type MergedFrom = z.infer<typeof MergedFromSchema>;
/** How many issues one merge takes into its target. */
export const MERGE_GROUPS_MAX = 50;
export const MergeIssuesBody = z.strictObject({
  groupIds: z
    .array(z.string().min(1).max(64))
    .min(1)
    .max(MERGE_GROUPS_MAX)
    .describe(`the issues to merge into this one (1 to ${MERGE_GROUPS_MAX}, this project's)`),
});

/** A kept occurrence: its text fields under their own names, plus the symbolicated frames when there are any. */
export const IssueSampleSchema = z.looseObject({
  stack: z.string().optional().describe('the original stack when a map resolved at least one frame, else as sent'),
  minifiedStack: z.string().optional().describe('the stack as the client sent it, present when at least one frame was resolved'),
  frames: z.array(SymbolicatedFrameSchema).optional().describe('every frame, minified and original (absent on events stored before issue 37)'),
  context: EventContextSchema.optional().describe('breadcrumbs, level, tags, contexts, request, user, release, SDK (issue 40); absent when none was sent'),
});
export type IssueSample = z.infer<typeof IssueSampleSchema>;

export const IssueSchema = IssueSummarySchema.extend({
  fingerprint: z.string(),
  stack: z.string().describe("the newest occurrence's stack: the original one when source maps resolved its frames"),
  frames: z
    .array(SymbolicatedFrameSchema)
    .nullable()
    .describe("the newest occurrence's frames with their resolution and context lines; null for an occurrence stored without them"),
  minifiedStack: z.string().nullable().describe("the newest occurrence's stack as the client sent it, when source maps resolved at least one frame"),
  samples: z.array(IssueSampleSchema).describe('the 20 most recent occurrences, newest first (scrubbed)'),
  firstSeenDeploy: IssueDeployRefSchema.nullable().optional().describe('the deploy that served its first event (issue 41); null when none could be named'),
  lastSeenDeploy: IssueDeployRefSchema.nullable().optional().describe('the deploy that served its newest event that named one'),
  regressedDeploy: IssueDeployRefSchema.nullable().optional().describe('the deploy whose events reopened it last (its newest in that batch)'),
  resolveInNextDeploy: z
    .object({
      markedAt: IssueDeployRefSchema.describe('the live deploy when it was marked: its events (and older ones) do not reopen it'),
      resolvedBy: IssueDeployRefSchema.nullable().describe('the first production deploy after markedAt, once one is live (the issue then reads `resolved`)'),
    })
    .nullable()
    .optional()
    .describe('set while the issue is resolved in next deploy'),
  ignoreUntil: z
    .object({
      condition: z.enum(UNIGNORE_REASONS),
      count: z.number().int().optional().describe('events / users: how many bring it back'),
      seen: z.number().int().optional().describe('events / users: how many came since it was ignored'),
      at: z.string().optional().describe('time: when it comes back (within a minute)'),
      ignoredAt: z.string().nullable(),
    })
    .nullable()
    .optional()
    .describe('while ignored with a condition (issue 41); null when ignored forever or not ignored'),
  unignoredReason: z
    .object({ reason: z.enum(UNIGNORE_REASONS), at: z.string() })
    .nullable()
    .optional()
    .describe('why an ignored issue came back by itself, until its next transition'),
  escalatingSince: z.string().nullable().optional().describe('set while the issue is escalating (issue 41)'),
  mergedFrom: z.array(MergedFromSchema).optional().describe('the issues merged into this one (issue 41), oldest merge first'),
  redirectedFrom: z.string().optional().describe('the id asked for, when that issue was merged into this one (GET answers the target, as Sentry redirects)'),
});
export type Issue = z.infer<typeof IssueSchema>;
export const IssueAnswer = z.object({ issue: IssueSchema });
export type IssueAnswer = z.infer<typeof IssueAnswer>;

/** Ignore until (issue 41): Sentry's `statusDetails` names; one condition at most, none = ignored forever. */
export const IGNORE_COUNT_MAX = 1_000_000;
/** A year, in minutes: the furthest `ignoreDuration` / `ignoreUntil` may reach. */
export const IGNORE_MINUTES_MAX = 525_600;
export const IGNORE_CONDITIONS = ['ignoreCount', 'ignoreUserCount', 'ignoreDuration', 'ignoreUntil', 'ignoreUntilEscalating'] as const;
const count = (what: string) => z.number().int().min(1).max(IGNORE_COUNT_MAX).describe(what);
export const IgnoreIssueBody = z
  .strictObject({
    ignoreCount: count('until N more events after now (1 to 1,000,000)').optional(),
    ignoreUserCount: count('until N more distinct users (user id, else email, else IP address) after now (1 to 1,000,000)').optional(),
    ignoreDuration: z.number().int().min(1).max(IGNORE_MINUTES_MAX).optional().describe('for N minutes (at most a year)'),
    ignoreUntil: z.iso.datetime({ offset: true }).optional().describe('until this time (ISO 8601, in the future, at most a year ahead)'),
    ignoreUntilEscalating: z.literal(true).optional().describe('until it escalates (its last hour is 3x its 7-day hourly baseline, and 10 events at least)'),
  })
  .refine((b) => IGNORE_CONDITIONS.filter((k) => b[k] !== undefined).length <= 1, { message: `at most one of ${IGNORE_CONDITIONS.join(', ')}` })
  .nullish();
export type IgnoreIssueBody = z.infer<typeof IgnoreIssueBody>;

export const ResolveIssueBody = z
  .strictObject({ inNextDeploy: z.boolean().optional().describe('resolve in next deploy (issue 41) rather than now') })
  // nullish: a POST without a body (spec §4.5's plain resolve) reaches the route with a null body.
  .nullish();
export const DeployIssuesParams = z.object({ slug: z.string(), deployId: z.string().max(64) });
export const DeployIssuesAnswer = z.object({ introduced: z.array(IssueSummarySchema), regressed: z.array(IssueSummarySchema) });
export type DeployIssuesAnswer = z.infer<typeof DeployIssuesAnswer>;

/** How many `key:value` terms an issue search may hold. */
export const ISSUE_QUERY_TAGS = 5;

export const IssueListQuery = z.object({
  status: IssueStatusSchema.default('unresolved'),
  environment: z.enum(ENVIRONMENTS).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(25),
  cursor: z.string().max(512).optional(),
  sort: z.enum(['count', 'lastSeen']).default('count').describe('count: most occurrences first; lastSeen: most recently seen first'),
  query: z
    .string()
    .max(200)
    .optional()
    .superRefine((q, ctx) => {
      const parsed = parseIssueQuery(q ?? '');
      if (!parsed.ok) ctx.addIssue({ code: 'custom', message: parsed.message });
    })
    .describe(
      `search: \`key:value\` terms filter by tag (browser, os, device, release, environment, url, level, runtime or the event's own tags; at most ${ISSUE_QUERY_TAGS} terms, \`key:"a value"\` for spaces); the other words are case-insensitive text in the name, message or culprit, or an exact groupId. A query wholly in double quotes is text only.`,
    ),
});
export type IssueListQuery = z.infer<typeof IssueListQuery>;

export interface IssueQuery {
  text: string;
  tags: Array<{ key: string; value: string }>;
}
const TAG_TERM = /^([a-zA-Z0-9_.-]{1,32}):(.*)$/s;
const TOKEN = /([a-zA-Z0-9_.-]{1,32}):"([^"]*)"|\S+/g;

/**
 * An issue search (issue 40): `browser:Chrome release:abc123 checkout` is two tag filters and the text `checkout`.
 * A term whose key is a tag key and whose value is empty, or more than ISSUE_QUERY_TAGS terms, or a value over 200
 * characters, is refused, not read as text.
 */
export function parseIssueQuery(q: string): ({ ok: true } & IssueQuery) | { ok: false; message: string } {
  const trimmed = q.trim();
  if (trimmed.length >= 2 && trimmed.startsWith('"') && trimmed.endsWith('"')) return { ok: true, text: trimmed.slice(1, -1).trim(), tags: [] };
  const tags: IssueQuery['tags'] = [];
  const words: string[] = [];
  for (const m of trimmed.matchAll(TOKEN)) {
    const [key, value] = m[1] !== undefined ? [m[1], m[2]!] : (TAG_TERM.exec(m[0])?.slice(1) ?? []);
    if (key === undefined || value === undefined) {
      words.push(m[0]);
      continue;
    }
    if (value === '') return { ok: false, message: `tag filter ${key}: has no value (quote a text search that holds a colon: "...")` };
    if (value.length > 200) return { ok: false, message: `tag filter ${key}: value is over 200 characters` };
    tags.push({ key, value });
    if (tags.length > ISSUE_QUERY_TAGS) return { ok: false, message: `at most ${ISSUE_QUERY_TAGS} tag filters` };
  }
  return { ok: true, text: words.join(' '), tags };
}

/** The top values of each tag over an issue's occurrences (issue 40). */
export const IssueTagsQuery = z.object({
  values: z.coerce.number().int().min(1).max(10).default(5).describe('top values per tag'),
});
export const IssueTagsAnswer = z.object({
  total: z.number().int().describe("the issue's occurrences kept in the analytical store"),
  tags: z
    .array(
      z.object({
        key: z.string(),
        count: z.number().int().describe('occurrences that have this tag'),
        values: z.array(z.object({ value: z.string(), count: z.number().int(), share: z.number().describe('count / total, 0 to 1') })),
      }),
    )
    .describe('browser, os, device, release, environment, url, level, runtime first (those present), then the 20 custom tags on most occurrences'),
});
export type IssueTagsAnswer = z.infer<typeof IssueTagsAnswer>;
export const IssuePage = pageOf(IssueSummarySchema);
export type IssuePage = z.infer<typeof IssuePage>;

export const IssueActionSchema = z.enum(['resolve', 'ignore', 'reopen']);
export type IssueAction = z.infer<typeof IssueActionSchema>;

export const BulkIssuesBody = z
  .object({
    action: IssueActionSchema,
    groupIds: z.array(z.string().min(1).max(64)).min(1).max(100),
    inNextDeploy: z.literal(true).optional().describe('with `resolve`: resolve in next deploy (issue 41), as the single-issue route'),
  })
  .strict()
  .refine((b) => !b.inNextDeploy || b.action === 'resolve', { message: 'inNextDeploy goes with action resolve', path: ['inNextDeploy'] });
export const BulkIssuesAnswer = z.object({
  updated: z.array(IssueSummarySchema),
  skipped: z.array(
    z.object({ groupId: z.string(), error: z.enum(['invalid_transition', 'not_found']), message: z.string(), status: IssueStatusSchema.nullable() }),
  ),
});
export type BulkIssuesAnswer = z.infer<typeof BulkIssuesAnswer>;

/** The host-pattern rules domains use: `*.example.com` matches its subdomains (domain/host-patterns.ts). */
const HostnameSchema = hostPatternSchema({ wildcard: true, message: 'must be a hostname or *.hostname, optionally with a port (no scheme or path)' });

export const ErrorSettingsSchema = z.object({
  paused: z.boolean().describe('when true, ingest accepts and drops (204)'),
  ingestOrigins: z
    .array(z.string())
    .describe(`hostnames or *. patterns (optionally host:port) allowed to post from browsers; empty allows every origin; at most ${LIMITS.ingestOrigins.max}`),
});
export type ErrorSettings = z.infer<typeof ErrorSettingsSchema>;
export const ErrorSettingsPatch = z
  .object({
    paused: z.boolean().optional(),
    ingestOrigins: z
      .array(HostnameSchema)
      .max(LIMITS.ingestOrigins.max)
      .transform((l) => [...new Set(l)])
      .optional(),
  })
  .strict();
export type ErrorSettingsPatch = z.infer<typeof ErrorSettingsPatch>;

export const AlertSettingsSchema = z.object({
  enabled: z.boolean(),
  recipients: z.array(z.string()).describe("alert recipients (the project's list, shared with uptime alerts); empty = the project owner"),
  suppressed: z
    .array(z.object({ email: z.string(), reason: z.enum(['bounced', 'complained']), since: z.string() }))
    .describe('addresses alert mail would go to that the mail provider reported as hard-bounced or complaining: skipped until re-enabled'),
});
export type AlertSettings = z.infer<typeof AlertSettingsSchema>;
export const AlertSettingsPatch = z
  .object({
    enabled: z.boolean().optional(),
    reenable: z.array(z.string().trim().toLowerCase().pipe(z.email())).max(50).optional().describe('take these addresses off the suppression list'),
    recipients: z
      .array(z.string().trim().toLowerCase().pipe(z.email()))
      .max(50)
      .transform((l) => [...new Set(l)])
      .optional(),
  })
  .strict();
export type AlertSettingsPatch = z.infer<typeof AlertSettingsPatch>;
export const TestAlertAnswer = z.object({ sent: z.literal(true), to: z.array(z.string()) });
export type TestAlertAnswer = z.infer<typeof TestAlertAnswer>;

const tags = ['errors'];
const errors = errorAnswers(400, 404);

/**
 * The family's routes (paths in route-table.ts). Reads need `errors:read`, changes `errors:write` (or a session / CLI
 * token that reaches the project). The static `errors/settings` path sits beside `errors/:groupId`; Fastify's router
 * prefers the static segment, so it is never read as a group id.
 */
export const errorRoutes = routeShapes({
  listIssues: {
    tags,
    summary: 'List issues, most occurrences first (default status unresolved); paginated with cursor',
    description:
      'Filter by `status`, `environment` (issues with occurrences there) and `query`; order by `sort` (count or lastSeen). The cursor belongs to the sort it came from.',
    params: SlugParams,
    querystring: IssueListQuery,
    response: { 200: IssuePage, ...errors },
  },
  getErrorSettings: { tags, summary: 'Error settings', params: SlugParams, response: { 200: ErrorSettingsSchema, ...errors } },
  updateErrorSettings: {
    tags,
    summary: 'Change paused and/or ingestOrigins',
    params: SlugParams,
    body: ErrorSettingsPatch,
    response: { 200: ErrorSettingsSchema, ...errors },
  },
  getIssue: {
    tags,
    summary: 'One issue with stack, recent samples, suggestion and per-environment counts',
    params: GroupParams,
    response: { 200: IssueAnswer, ...errors },
  },
  getIssueTags: {
    tags,
    summary: "Tag facets of an issue: each tag's top values with counts and shares over the issue's occurrences",
    description:
      "Derived tags (browser, os, device, release: the SDK release else the deploy, environment: the server's, url, level, runtime) and the events' own tags, as the issue list filters by them (`query=browser:Chrome`).",
    params: GroupParams,
    querystring: IssueTagsQuery,
    response: { 200: IssueTagsAnswer, ...errors },
  },
  resolveIssue: {
    tags,
    summary: 'Resolve an unresolved issue, now or in next deploy',
    description:
      'With `{"inNextDeploy": true}` (issue 41) the issue becomes `resolving`: it stays open until a production deploy newer than the project\'s live one goes live, then reads `resolved`; events of the live deploy or older ones do not reopen it, events of a newer deploy do. 409 `invalid_transition` when the project has no live deploy.',
    params: GroupParams,
    body: ResolveIssueBody,
    response: { 200: IssueAnswer, ...errorAnswers(409), ...errors },
  },
  listDeployIssues: {
    tags,
    summary: "A deploy's issues: the ones first seen in it and the ones it regressed (issue 41), 100 of each at most, most events first",
    params: DeployIssuesParams,
    response: { 200: DeployIssuesAnswer, ...errors },
  },
  ignoreIssue: {
    tags,
    summary: 'Ignore an unresolved issue (no more alert email), forever or until a condition',
    description:
      'No body: ignored forever. One of Sentry\'s conditions brings it back to `unresolved` by itself (issue 41): `{"ignoreCount": N}` N more events, `{"ignoreUserCount": N}` N more distinct users, `{"ignoreDuration": minutes}` or `{"ignoreUntil": "<ISO>"}` a time (checked every minute), `{"ignoreUntilEscalating": true}` when it escalates. The issue then shows `unignoredReason`; coming back is not a regression.',
    params: GroupParams,
    body: IgnoreIssueBody,
    response: { 200: IssueAnswer, ...errorAnswers(409), ...errors },
  },
  reopenIssue: { tags, summary: 'Reopen a resolved or ignored issue', params: GroupParams, response: { 200: IssueAnswer, ...errorAnswers(409), ...errors } },
  bulkIssues: {
    tags,
    summary: 'Resolve, ignore or reopen up to 100 issues at once',
    description:
      'Each issue moves as its single-issue route would (§3.1). Issues not in a state the action leaves from, or not found, are listed in `skipped` with the reason; the others are in `updated`.',
    params: SlugParams,
    body: BulkIssuesBody,
    response: { 200: BulkIssuesAnswer, ...errors },
  },
  mergeIssues: {
    tags,
    summary: "Merge issues into this one (Sentry's merge)",
    description:
      "The issue keeps its id, fingerprint, status and samples and takes the others' fingerprints: later events of any of them land here. Their counts, environment counts and first/last seen widen it; their kept samples are dropped (their occurrences count in its tag facets). They leave the lists, and GET of a merged id answers this issue with `redirectedFrom`. Merging an issue that merged others moves those too. 404 when one of them is not an issue of this project (or already merged), 400 when it is this issue.",
    params: GroupParams,
    body: MergeIssuesBody,
    response: { 200: IssueAnswer, ...errors },
  },
  getErrorAlerts: { tags, summary: 'Alert email settings', params: SlugParams, response: { 200: AlertSettingsSchema, ...errors } },
  updateErrorAlerts: {
    tags,
    summary: 'Toggle alert email and/or replace the recipient list',
    params: SlugParams,
    body: AlertSettingsPatch,
    response: { 200: AlertSettingsSchema, ...errors },
  },
  testErrorAlert: {
    tags,
    summary: 'Send a real test alert email; at most one per 15 minutes per project (429 rate_limited with Retry-After)',
    params: SlugParams,
    response: { 202: TestAlertAnswer, ...errorAnswers(409, 429, 503), ...errors },
  },
});
