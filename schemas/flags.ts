import { z } from 'zod';
import { ENVIRONMENTS } from './error-event.ts';

/**
 * Feature flags (spec §4.7): the stored definition, its checks, and the shape of one answer. Evaluation, which is pure so
 * the edge evaluates from memory and an SDK can evaluate locally with the same answer, is domain/flag-evaluation.ts.
 */
export const FLAG_KEY = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,99}$/;

export const PropertyFilterSchema = z.object({
  key: z.string().min(1).max(200),
  operator: z.enum(['eq', 'neq', 'in', 'not_in', 'contains', 'gt', 'lt', 'exists', 'not_exists']),
  value: z.unknown().optional(),
});
export type PropertyFilter = z.infer<typeof PropertyFilterSchema>;

export const FlagConditionSchema = z.object({
  /** Server-stamped environments this condition applies to (§7.4); none: every environment. */
  environments: z.array(z.enum(ENVIRONMENTS)).max(3).optional(),
  /** Every filter must match the caller's properties. */
  properties: z.array(PropertyFilterSchema).max(20).default([]),
  /** Overrides the flag's rollout for callers this condition matches. */
  rolloutPercentage: z.number().min(0).max(100).optional(),
  /** Serve this variant to callers this condition matches. */
  variant: z.string().min(1).max(100).optional(),
});
export type FlagCondition = z.infer<typeof FlagConditionSchema>;

export const FlagVariantSchema = z.object({ key: z.string().min(1).max(100), weight: z.number().min(0).max(100) });

export const FlagDefinitionSchema = z.object({
  key: z.string().regex(FLAG_KEY, 'letters, digits, _ . - (at most 100), starting with a letter or digit'),
  description: z.string().max(1000).default(''),
  enabled: z.boolean().default(false),
  rolloutPercentage: z.number().min(0).max(100).default(100),
  variants: z.array(FlagVariantSchema).max(20).default([]),
  /** Any JSON, returned with the flag when it is enabled (at most 16 KB). */
  payload: z.unknown().optional(),
  conditions: z.array(FlagConditionSchema).max(20).default([]),
});
export type FlagDefinition = z.infer<typeof FlagDefinitionSchema>;

/** Variant weights must add up to 100, and a condition's variant must exist. */
export function flagProblems(f: Pick<FlagDefinition, 'variants' | 'conditions' | 'payload'>): Array<{ path: string; message: string }> {
  const out: Array<{ path: string; message: string }> = [];
  if (f.variants.length) {
    const sum = f.variants.reduce((n, v) => n + v.weight, 0);
    if (Math.abs(sum - 100) > 1e-9) out.push({ path: 'variants', message: `weights add up to ${sum}, not 100` });
    if (new Set(f.variants.map((v) => v.key)).size !== f.variants.length) out.push({ path: 'variants', message: 'variant keys must be unique' });
  }
  f.conditions.forEach((c, i) => {
    if (c.variant !== undefined && !f.variants.some((v) => v.key === c.variant))
      out.push({ path: `conditions.${i}.variant`, message: `no variant ${c.variant}` });
  });
  if (f.payload !== undefined && Buffer.byteLength(JSON.stringify(f.payload) ?? '') > 16 * 1024)
    out.push({ path: 'payload', message: 'at most 16 KB as JSON' });
  return out;
}

/** Why a flag answered as it did. */
export const FLAG_REASONS = ['disabled', 'no_condition_match', 'out_of_rollout', 'rollout', 'unknown_flag'] as const;
/** One flag's answer to one caller, as the edge evaluates it (GET /v1/flags/i). */
export const FlagAnswerSchema = z.object({
  enabled: z.boolean(),
  variant: z.string().nullable(),
  payload: z.unknown().describe("the flag's JSON payload when enabled, else null"),
  reason: z.enum(FLAG_REASONS),
});
export type FlagAnswer = z.infer<typeof FlagAnswerSchema>;
