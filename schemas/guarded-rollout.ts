import { z } from 'zod';

/**
 * Guarded rollout (issue 41): a project's setting, and the verdict the builder's sweep (builder/guarded-rollout/)
 * records on a production deploy it watched for a window after it went live. Stored as set in projects.guarded_rollout
 * (jsonb); the defaults below fill in what was never set, so a default changed here applies to every project that did
 * not choose.
 */

/** When a deploy is degraded: each threshold on its own suffices. The bounds, without defaults (a patch's fields). */
const THRESHOLD_FIELDS = {
  newIssues: z
    .number()
    .int()
    .min(1)
    .max(10_000)
    .describe(
      "issues first seen in the deploy during the window: degraded at this many (default 3), when also more than the previous deploy's same span + newIssuesMargin",
    ),
  newIssuesMargin: z.number().int().min(0).max(10_000).describe('default 2'),
  errorRateFactor: z
    .number()
    .min(1)
    .max(1000)
    .describe(
      "error events per minute attributed to the deploy: degraded at this multiple (default 2) of the previous deploy's rate over the same span (any rate when it had none)",
    ),
  minErrorEvents: z.number().int().min(1).max(1_000_000).describe('…and only with at least this many error events (default 10)'),
  crashFreeDropPoints: z
    .number()
    .min(0.1)
    .max(100)
    .describe("crash-free sessions (percent) this many points (default 5) under the previous deploy's same span (100% when it had no sessions)"),
  minSessions: z.number().int().min(1).max(1_000_000).describe('…and only with at least this many sessions (default 20)'),
};
const THRESHOLD_DEFAULTS = { newIssues: 3, newIssuesMargin: 2, errorRateFactor: 2, minErrorEvents: 10, crashFreeDropPoints: 5, minSessions: 20 };
export const GuardThresholdsSchema = z.object({
  newIssues: THRESHOLD_FIELDS.newIssues.default(THRESHOLD_DEFAULTS.newIssues),
  newIssuesMargin: THRESHOLD_FIELDS.newIssuesMargin.default(THRESHOLD_DEFAULTS.newIssuesMargin),
  errorRateFactor: THRESHOLD_FIELDS.errorRateFactor.default(THRESHOLD_DEFAULTS.errorRateFactor),
  minErrorEvents: THRESHOLD_FIELDS.minErrorEvents.default(THRESHOLD_DEFAULTS.minErrorEvents),
  crashFreeDropPoints: THRESHOLD_FIELDS.crashFreeDropPoints.default(THRESHOLD_DEFAULTS.crashFreeDropPoints),
  minSessions: THRESHOLD_FIELDS.minSessions.default(THRESHOLD_DEFAULTS.minSessions),
});
export type GuardThresholds = z.infer<typeof GuardThresholdsSchema>;

export const GUARD_WINDOW_MINUTES = { min: 1, max: 60, default: 10 } as const;

export const GuardedRolloutSchema = z.object({
  enabled: z.boolean().default(true).describe('watch each new production deploy for its window and send deploy.degraded past a threshold (default true)'),
  autoRollback: z
    .boolean()
    .default(false)
    .describe('also roll a degraded deploy back to the previous ready production deploy, as the rollback route does (default false: opt in)'),
  windowMinutes: z
    .number()
    .int()
    .min(GUARD_WINDOW_MINUTES.min)
    .max(GUARD_WINDOW_MINUTES.max)
    .default(GUARD_WINDOW_MINUTES.default)
    .describe('how long after going live a deploy is watched; judged all along, marked healthy at its end'),
  thresholds: GuardThresholdsSchema.default(THRESHOLD_DEFAULTS),
});
export type GuardedRollout = z.infer<typeof GuardedRolloutSchema>;

/** A patch of the setting: any field, thresholds one by one. */
export const GuardedRolloutPatch = z
  .object({
    enabled: z.boolean().optional(),
    autoRollback: z.boolean().optional(),
    windowMinutes: z.number().int().min(GUARD_WINDOW_MINUTES.min).max(GUARD_WINDOW_MINUTES.max).optional(),
    thresholds: z.object(THRESHOLD_FIELDS).partial().strict().optional().describe('each threshold given replaces the stored one'),
  })
  .strict();
export type GuardedRolloutPatch = z.infer<typeof GuardedRolloutPatch>;

/** The stored setting with its defaults; a stored value no longer valid (a bound tightened since) reads as the default. */
export function guardedRolloutOf(stored: unknown): GuardedRollout {
  const parsed = GuardedRolloutSchema.safeParse(stored ?? {});
  if (parsed.success) return parsed.data;
  return GuardedRolloutSchema.parse({});
}

export const GUARD_STATUSES = ['watching', 'healthy', 'degraded', 'rolled_back', 'superseded'] as const;
export type GuardStatus = (typeof GUARD_STATUSES)[number];

/** One deploy's (or the previous deploy's same span's) numbers. */
export const GuardNumbersSchema = z.object({
  newIssues: z.number().int().describe('issues first seen in the deploy within the span'),
  errorEvents: z.number().int().describe('error events attributed to the deploy within the span'),
  errorsPerMinute: z.number(),
  sessions: z.number().int(),
  crashFreeSessions: z.number().nullable().describe('0..1; null without sessions'),
});
export type GuardNumbers = z.infer<typeof GuardNumbersSchema>;

export const GuardEvidenceSchema = z.object({
  windowMinutes: z.number().int(),
  liveAt: z.string(),
  elapsedMs: z.number().int().describe('how far into its window the deploy was when judged'),
  current: GuardNumbersSchema,
  previous: GuardNumbersSchema.extend({ deployId: z.string().nullable(), spanMs: z.number().int() }).describe(
    "the previous live production deploy over the same span from its own going live (none: the project's first deploy, compared with zeros)",
  ),
  reasons: z.array(z.string()).describe('each threshold passed, in words; empty when healthy'),
  rolledBackTo: z.string().nullable().describe('the deploy made live again, when rolled back'),
  note: z.string().nullable().describe('why a degraded deploy was not rolled back, or why watching stopped'),
});
export type GuardEvidence = z.infer<typeof GuardEvidenceSchema>;

/** A deploy's guard as the API shows it (`guard` of a deploy; null for deploys never watched). */
export const DeployGuardSchema = z
  .object({
    status: z.enum(GUARD_STATUSES).describe('watching -> healthy | degraded | rolled_back | superseded (replaced before its window ended)'),
    decidedAt: z.string().nullable(),
    evidence: GuardEvidenceSchema.nullable(),
  })
  .describe("guarded rollout's verdict (issue 41); null for deploys never watched (previews, failed, the setting off)");
export type DeployGuard = z.infer<typeof DeployGuardSchema>;

/** `data` of deploy.degraded. */
export const DeployDegradedDataSchema = z.object({
  deployId: z.string(),
  branch: z.string(),
  gitSha: z.string().nullable(),
  environment: z.literal('production'),
  url: z.string().describe("the deploy's console page"),
  rolledBack: z.boolean().describe('the project opted in to autoRollback and the deploy was rolled back'),
  rolledBackTo: z.string().nullable(),
  evidence: GuardEvidenceSchema,
});
export type DeployDegradedData = z.infer<typeof DeployDegradedDataSchema>;
