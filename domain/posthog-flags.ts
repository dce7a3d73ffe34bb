import { hash } from 'node:crypto';
import type { FlagAnswer, FlagCondition, FlagDefinition, PropertyFilter } from '../schemas/flags.ts';

/**
 * Our feature flags in PostHog's shapes (pure), so PostHog's SDKs work unchanged:
 * - the answer of `POST /flags/?v=2` and `/decide/` (ingest/posthog/posthog-flags-route.ts): each flag's detail
 *   (`{ key, enabled, variant, reason, metadata: { id, payload } }`) and the older `featureFlags` /
 *   `featureFlagPayloads` maps, from the edge's own evaluation (domain/flag-evaluation.ts);
 * - the definitions server SDKs evaluate locally (`GET /flags/definitions`, api/flags/local-evaluation-routes.ts):
 *   PostHog's filter groups, written so PostHog's local evaluation gives our answer. Our bucketing is PostHog's
 *   (the same SHA-1 of `<key>.<distinctId>`), so a translated flag answers the same for every caller.
 *
 * A flag whose rules PostHog's local evaluation would read differently is sent marked
 * `ensure_experience_continuity`, which PostHog's SDKs never evaluate locally: they ask `/flags/` for it, and the
 * service answers. That is the case when:
 *   - a condition whose filters match but whose rollout misses stops our evaluation, while PostHog tries the next
 *     condition: so any condition but the last with a rollout under 100;
 *   - PostHog tries conditions naming a variant before the others: so a variant condition after a plain one;
 *   - `gt` / `lt` (PostHog compares non-numbers as text; we answer false) and `contains` with non-ASCII text (PostHog
 *     lower-cases ASCII only).
 * A condition limited to environments is for pages and deploys; a server SDK's call has none (`unknown`), so such a
 * condition is left out unless it names `unknown`.
 * Filters become PostHog's operators that agree with ours on a present property (strings, numbers, booleans): `eq`
 * is an anchored, escaped `regex` (PostHog's `exact` ignores case), `in` a regex of alternatives. A property the
 * caller did not send makes PostHog's local evaluation inconclusive, and it asks the service.
 */

/** A flag's numeric id in PostHog's answers (stable per key: PostHog's SDKs send it with `$feature_flag_called`). */
export const posthogFlagId = (key: string): number => Number.parseInt(hash('sha1', key, 'hex').slice(0, 8), 16) & 0x7fffffff;

const REASONS: Record<FlagAnswer['reason'], { code: string; description: string }> = {
  rollout: { code: 'condition_match', description: 'Matched a condition and the rollout' },
  no_condition_match: { code: 'no_condition_match', description: 'No condition matched' },
  out_of_rollout: { code: 'out_of_rollout_bound', description: 'Out of the rollout' },
  disabled: { code: 'flag_disabled', description: 'The flag is disabled' },
  unknown_flag: { code: 'flag_not_found', description: 'No such flag' },
};

export interface PostHogFlagDetail {
  key: string;
  enabled: boolean;
  variant?: string;
  reason: { code: string; description: string; condition_index: number | null };
  metadata: { id: number; version: number; payload?: string; description?: string };
}

export function posthogFlagDetail(key: string, flag: FlagDefinition | undefined, a: FlagAnswer): PostHogFlagDetail {
  const detail: PostHogFlagDetail = {
    key,
    enabled: a.enabled,
    reason: { ...REASONS[a.reason], condition_index: null },
    metadata: { id: posthogFlagId(key), version: 1 },
  };
  if (a.variant !== null) detail.variant = a.variant;
  if (a.enabled && flag?.payload !== undefined) detail.metadata.payload = JSON.stringify(flag.payload);
  if (flag?.description) detail.metadata.description = flag.description;
  return detail;
}

/** `/flags/` and `/decide/`: both shapes, PostHog's v2 `flags` and the older maps, so every SDK version reads it. */
export function posthogFlagsResponse(details: PostHogFlagDetail[], requestId: string) {
  const flags: Record<string, PostHogFlagDetail> = {};
  const featureFlags: Record<string, string | boolean> = {};
  const featureFlagPayloads: Record<string, string> = {};
  for (const d of details) {
    flags[d.key] = d;
    featureFlags[d.key] = d.enabled ? (d.variant ?? true) : false;
    if (d.metadata.payload !== undefined) featureFlagPayloads[d.key] = d.metadata.payload;
  }
  return { flags, featureFlags, featureFlagPayloads, errorsWhileComputingFlags: false, quotaLimited: [] as string[], requestId };
}

// ---------------------------------------------------------------- definitions for local evaluation

interface PostHogProperty {
  key: string;
  type: 'person';
  operator: string;
  value?: unknown;
}
interface PostHogGroup {
  properties: PostHogProperty[];
  rollout_percentage: number;
  variant?: string;
}
export type PostHogFlagDefinition = {
  id: number;
  key: string;
  name: string;
  active: boolean;
  ensure_experience_continuity: boolean;
  filters: {
    groups: PostHogGroup[];
    multivariate: { variants: Array<{ key: string; rollout_percentage: number }> } | null;
    payloads: Record<string, string>;
  };
};

const reEscape = (s: string) => s.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
const valueText = (x: unknown): string => (typeof x === 'string' ? x : JSON.stringify(x));
const exactly = (values: unknown[]) => `^(?:${values.map((v) => reEscape(valueText(v))).join('|')})$`;
const NEVER = '(?!)';

function posthogProperty(f: PropertyFilter): PostHogProperty | undefined {
  const p = (operator: string, value?: unknown): PostHogProperty => ({ key: f.key, type: 'person', operator, ...(value === undefined ? {} : { value }) });
  switch (f.operator) {
    case 'exists':
      return p('is_set', 'is_set');
    case 'not_exists':
      return p('is_not_set', 'is_not_set');
    case 'eq':
      return p('regex', exactly([f.value]));
    case 'neq':
      return p('not_regex', exactly([f.value]));
    case 'in':
      return Array.isArray(f.value) && f.value.length ? p('regex', exactly(f.value)) : p('regex', NEVER);
    case 'not_in':
      return Array.isArray(f.value) && f.value.length ? p('not_regex', exactly(f.value)) : p('is_set', 'is_set');
    case 'contains':
      // PostHog lower-cases ASCII only: text with other letters is left to the service.
      if (typeof f.value !== 'string') return p('regex', NEVER);
      return /^[\x20-\x7e]*$/.test(f.value) ? p('icontains', f.value) : undefined;
    default:
      return undefined; // gt, lt
  }
}

/** Whether PostHog's order of trying conditions gives ours (see the module note). */
function sameOrder(conditions: FlagCondition[], flagRollout: number): boolean {
  let plainSeen = false;
  for (let i = 0; i < conditions.length; i++) {
    const c = conditions[i]!;
    if (i < conditions.length - 1 && (c.rolloutPercentage ?? flagRollout) < 100) return false;
    if (c.variant === undefined) plainSeen = true;
    else if (plainSeen) return false;
  }
  return true;
}

export function posthogDefinition(flag: FlagDefinition): PostHogFlagDefinition {
  // A server SDK's call has no environment: conditions for pages' and deploys' environments never match it.
  const conditions = flag.conditions.filter((c) => !c.environments?.length || c.environments.includes('unknown'));
  let local = sameOrder(conditions, flag.rolloutPercentage);
  const groups: PostHogGroup[] = [];
  if (!flag.conditions.length) groups.push({ properties: [], rollout_percentage: flag.rolloutPercentage });
  for (const c of conditions) {
    const properties: PostHogProperty[] = [];
    for (const f of c.properties) {
      const prop = posthogProperty(f);
      if (prop) properties.push(prop);
      else local = false;
    }
    const group: PostHogGroup = { properties, rollout_percentage: c.rolloutPercentage ?? flag.rolloutPercentage };
    if (c.variant !== undefined) group.variant = c.variant;
    groups.push(group);
  }
  const payloads: Record<string, string> = {};
  if (flag.payload !== undefined) {
    const text = JSON.stringify(flag.payload);
    payloads.true = text;
    for (const v of flag.variants) payloads[v.key] = text;
  }
  return {
    id: posthogFlagId(flag.key),
    key: flag.key,
    name: flag.description,
    active: flag.enabled,
    ensure_experience_continuity: !local,
    filters: {
      groups,
      multivariate: flag.variants.length ? { variants: flag.variants.map((v) => ({ key: v.key, rollout_percentage: v.weight })) } : null,
      payloads,
    },
  };
}

/** The answer of `GET /flags/definitions` (and `/api/feature_flag/local_evaluation`). */
export function localEvaluationAnswer(flags: FlagDefinition[]) {
  return { flags: flags.map(posthogDefinition), group_type_mapping: {}, cohorts: {} };
}
