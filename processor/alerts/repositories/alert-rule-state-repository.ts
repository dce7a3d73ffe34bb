import type { Queryable } from '../../../platform/ports/relational-store.ts';

/**
 * What evaluating alert rules keeps (platform/migrations/relational/0039_alert_rules.sql): each (rule, issue)'s last fire
 * (the throttle), and for frequency triggers the events per minute and each user's last minute. Rows of minutes older
 * than the longest window (1,440 minutes) go as the same (rule, issue) is counted again.
 */
export interface RuleGroupKey {
  projectId: string;
  ruleId: string;
  groupId: string;
}

export const keyOf = (k: RuleGroupKey) => `${k.projectId}\n${k.ruleId}\n${k.groupId}`;

const keysJson = (keys: RuleGroupKey[]) => JSON.stringify(keys.map((k) => ({ p: k.projectId, r: k.ruleId, g: k.groupId })));

export const alertRuleStateRepository = {
  /**
   * Claim a fire for each (rule, issue): one conditional upsert, so concurrent processors fire once a window. A pair
   * fires when it never did, or last did at least its rule's throttle ago; never for an ignored issue. Returns the
   * claimed pairs' keys (keyOf). `keys` must not repeat a pair.
   */
  async claimFires(db: Queryable, keys: RuleGroupKey[], now: number): Promise<Set<string>> {
    if (!keys.length) return new Set();
    const { rows } = await db.query<{ project_id: string; rule_id: string; group_id: string }>(
      `INSERT INTO alert_rule_fires AS f (project_id, rule_id, group_id, last_fired_at)
       SELECT x.p, x.r, x.g, $2::timestamptz
         FROM jsonb_to_recordset($1::jsonb) AS x(p text, r text, g text)
         JOIN error_groups g ON g.id = x.g AND g.project_id = x.p AND g.status <> 'ignored'
         JOIN alert_rules r ON r.project_id = x.p AND r.id = x.r
       ON CONFLICT (project_id, rule_id, group_id) DO UPDATE SET last_fired_at = EXCLUDED.last_fired_at
        WHERE f.last_fired_at <= EXCLUDED.last_fired_at
                - make_interval(mins => (SELECT r.throttle_minutes FROM alert_rules r WHERE r.project_id = f.project_id AND r.id = f.rule_id))
       RETURNING f.project_id, f.rule_id, f.group_id`,
      [keysJson(keys), new Date(now)],
    );
    return new Set(rows.map((r) => keyOf({ projectId: r.project_id, ruleId: r.rule_id, groupId: r.group_id })));
  },

  /** Add events to their (rule, issue, minute) buckets, dropping the pairs' buckets older than `pruneBefore`. */
  async addEvents(db: Queryable, items: Array<RuleGroupKey & { minute: number; events: number }>, pruneBefore: number): Promise<void> {
    if (!items.length) return;
    await db.query(
      `WITH x AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(p text, r text, g text, m bigint, n int)),
            gone AS (DELETE FROM alert_rule_event_counts c USING (SELECT DISTINCT p, r, g FROM x) k
                      WHERE c.project_id = k.p AND c.rule_id = k.r AND c.group_id = k.g AND c.minute < $2)
       INSERT INTO alert_rule_event_counts AS c (project_id, rule_id, group_id, minute, events)
       SELECT p, r, g, m, sum(n)::int FROM x GROUP BY p, r, g, m
       ON CONFLICT (project_id, rule_id, group_id, minute) DO UPDATE SET events = c.events + EXCLUDED.events`,
      [JSON.stringify(items.map((i) => ({ p: i.projectId, r: i.ruleId, g: i.groupId, m: i.minute, n: i.events }))), pruneBefore],
    );
  },

  /** Each pair's events from minute `since[key]` on. */
  async eventsSince(db: Queryable, items: Array<RuleGroupKey & { since: number }>): Promise<Map<string, number>> {
    if (!items.length) return new Map();
    const { rows } = await db.query<{ p: string; r: string; g: string; n: string | number }>(
      `SELECT x.p, x.r, x.g, COALESCE(sum(c.events), 0) AS n
         FROM jsonb_to_recordset($1::jsonb) AS x(p text, r text, g text, s bigint)
         LEFT JOIN alert_rule_event_counts c ON c.project_id = x.p AND c.rule_id = x.r AND c.group_id = x.g AND c.minute >= x.s
        GROUP BY x.p, x.r, x.g`,
      [JSON.stringify(items.map((i) => ({ p: i.projectId, r: i.ruleId, g: i.groupId, s: i.since })))],
    );
    return new Map(rows.map((r) => [keyOf({ projectId: r.p, ruleId: r.r, groupId: r.g }), Number(r.n)]));
  },

  /** Note each (rule, issue)'s users at their minute (the later one kept), dropping the pairs' users older than `pruneBefore`. */
  async addUsers(db: Queryable, items: Array<RuleGroupKey & { user: string; minute: number }>, pruneBefore: number): Promise<void> {
    if (!items.length) return;
    await db.query(
      `WITH x AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(p text, r text, g text, u text, m bigint)),
            gone AS (DELETE FROM alert_rule_users c USING (SELECT DISTINCT p, r, g FROM x) k
                      WHERE c.project_id = k.p AND c.rule_id = k.r AND c.group_id = k.g AND c.minute < $2)
       INSERT INTO alert_rule_users AS c (project_id, rule_id, group_id, user_key, minute)
       SELECT p, r, g, u, max(m) FROM x GROUP BY p, r, g, u
       ON CONFLICT (project_id, rule_id, group_id, user_key) DO UPDATE SET minute = GREATEST(c.minute, EXCLUDED.minute)`,
      [JSON.stringify(items.map((i) => ({ p: i.projectId, r: i.ruleId, g: i.groupId, u: i.user, m: i.minute }))), pruneBefore],
    );
  },

  /** Each pair's distinct users seen from minute `since` on. */
  async usersSince(db: Queryable, items: Array<RuleGroupKey & { since: number }>): Promise<Map<string, number>> {
    if (!items.length) return new Map();
    const { rows } = await db.query<{ p: string; r: string; g: string; n: string | number }>(
      `SELECT x.p, x.r, x.g, count(c.user_key) AS n
         FROM jsonb_to_recordset($1::jsonb) AS x(p text, r text, g text, s bigint)
         LEFT JOIN alert_rule_users c ON c.project_id = x.p AND c.rule_id = x.r AND c.group_id = x.g AND c.minute >= x.s
        GROUP BY x.p, x.r, x.g`,
      [JSON.stringify(items.map((i) => ({ p: i.projectId, r: i.ruleId, g: i.groupId, s: i.since })))],
    );
    return new Map(rows.map((r) => [keyOf({ projectId: r.p, ruleId: r.r, groupId: r.g }), Number(r.n)]));
  },

  /** Whether the project's alert e-mail is on (error-alerts `enabled`, spec §2.8; on when never set). */
  async emailEnabled(db: Queryable, projectId: string): Promise<boolean> {
    const r = await db.query<{ alerts_enabled: boolean }>('SELECT alerts_enabled FROM error_settings WHERE project_id = $1', [projectId]);
    return r.rows[0]?.alerts_enabled ?? true;
  },
};
