import { z } from 'zod';
import { ENVIRONMENTS } from '../error-event.ts';
import { hostPatternSchema } from '../host-pattern.ts';
import { LIMITS } from '../limits.ts';
import { pageOf } from './common.ts';

/** Error tracking (spec §4.5): the issue inbox, its transitions (§3.1), error settings (§2.7) and alert settings (§2.8). */
export const IssueStatusSchema = z.enum(['unresolved', 'resolved', 'ignored']);
export type IssueStatus = z.infer<typeof IssueStatusSchema>;

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

export const IssueSchema = IssueSummarySchema.extend({
  fingerprint: z.string(),
  stack: z.string(),
  samples: z.array(z.record(z.string(), z.unknown())).describe('the 20 most recent occurrences, newest first (scrubbed)'),
});
export type Issue = z.infer<typeof IssueSchema>;
export const IssueAnswer = z.object({ issue: IssueSchema });
export type IssueAnswer = z.infer<typeof IssueAnswer>;

export const IssueListQuery = z.object({
  status: IssueStatusSchema.default('unresolved'),
  environment: z.enum(ENVIRONMENTS).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(25),
  cursor: z.string().max(512).optional(),
  sort: z.enum(['count', 'lastSeen']).default('count').describe('count: most occurrences first; lastSeen: most recently seen first'),
  query: z.string().max(200).optional().describe('search: case-insensitive text in the name, message or culprit, or an exact groupId'),
});
export type IssueListQuery = z.infer<typeof IssueListQuery>;
export const IssuePage = pageOf(IssueSummarySchema);
export type IssuePage = z.infer<typeof IssuePage>;

export const IssueActionSchema = z.enum(['resolve', 'ignore', 'reopen']);
export type IssueAction = z.infer<typeof IssueActionSchema>;

export const BulkIssuesBody = z
  .object({
    action: IssueActionSchema,
    groupIds: z.array(z.string().min(1).max(64)).min(1).max(100),
  })
  .strict();
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
