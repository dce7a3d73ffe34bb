import { createHash } from 'node:crypto';
import type { Clock } from '../../platform/clock.ts';
import type { Logger } from '../../platform/logger.ts';
import type { Bus } from '../../platform/ports/bus.ts';
import type { Mailer } from '../../platform/ports/mailer.ts';
import type { Queryable } from '../../platform/ports/relational-store.ts';
import { alertRecipients } from '../../domain/alert-recipients.ts';
import { projectRules } from '../../domain/alert-rules/alert-rules.ts';
import { type IssueEventFacts, issueEventsRepository } from '../../domain/issue-events/issue-events-repository.ts';
import { deployIdOf, type IssueEventItem, issueEventData } from '../../domain/issue-events/issue-events.ts';
import { publishProjectEvent } from '../../domain/project-event-publisher.ts';
import type { AlertRule, AlertTrigger, AlertTriggerType } from '../../schemas/api/alerts.ts';
import type { ErrorLevel } from '../../schemas/error-context.ts';
import type { GroupChange } from '../errors/steps/group-step.ts';
import type { EnvironmentStampedEvent } from '../errors/steps/outcome.ts';
import { alertRuleStateRepository as state, keyOf, type RuleGroupKey } from './repositories/alert-rule-state-repository.ts';

/**
 * Alert rules (issue 41) evaluated: after the error pipeline's commit, per batch (its step 11), and for the issues the
 * escalation sweep finds escalating (`evaluateEscalation`, the sweep's `onEscalating` hook).
 *
 *  1. rules     the batch's projects' rules, from a cache of LIMITS.alertRules.cacheMs (domain/alert-rules): a project
 *               that never wrote its rules has the default rule, which the pipeline claims itself as spec §7.6 always
 *               did (steps/alert-step.ts): nothing more here, no query. A batch of such projects costs a cache read.
 *  2. match     per enabled rule and issue, the batch's events its filters take (environments, levels: an event
 *               without a level is `error`); then its triggers:
 *                 new_issue   the batch created the issue, or (the rule looking at production) brought its first
 *                             production event (§7.6's "new production issue");
 *                 regression  the batch reopened a resolved issue (or a resolving one, issue 41);
 *                 escalation  only from the sweep (evaluateEscalation), with the sweep's environment;
 *                 event_frequency / user_frequency  step 3.
 *  3. count     frequency triggers only (only projects with such rules pay): the matched events into per-minute
 *               buckets in Postgres (alert_rule_event_counts; users: each one's last minute, alert_rule_users), then
 *               the window's sum from minute `now - M + 1` on. Postgres rather than ClickHouse: the counts need the
 *               rule's own filters (per rule, not per issue), are read right after they are written (ClickHouse's
 *               rows of this batch may not be merged yet), and stay a few rows per (rule, issue) and minute.
 *  4. claim     one conditional upsert per batch (alert_rule_fires): a (rule, issue) fires when it never did or last
 *               did at least the rule's throttle ago, never for an ignored issue; concurrent processors fire once.
 *  5. act       e-mail the project's alert recipients (error-alerts `enabled: false` turns e-mail off, spec §2.8) and
 *               publish one `issue.alert` project event per fire to the rule's endpoints only (schemas/project-events.ts
 *               `endpointIds`): the webhook fan-out signs, retries and formats it like any delivery.
 * Never rejects: a failure is logged (the batch is stored; only the alert is lost). A re-delivered batch's events are
 * duplicates, so it neither triggers nor counts again.
 */
export interface AlertRulesDeps {
  db: Queryable;
  bus: Bus;
  mailer: Mailer;
  clock: Clock;
  logger: Logger;
  publicBaseUrl: string;
}

export interface EscalatingItem {
  projectId: string;
  groupId: string;
  environment: string | null;
}

export interface AlertRuleEvaluation {
  afterBatch(changes: GroupChange[], accepted: EnvironmentStampedEvent[]): Promise<void>;
  /** The escalation sweep's hook (`onEscalating`): rules with an `escalation` trigger, for the sweep's environment. */
  evaluateEscalation(items: EscalatingItem[]): Promise<void>;
}

/** One (rule, issue) that a trigger fired, before the throttle. */
interface Candidate extends RuleGroupKey {
  rule: AlertRule;
  trigger: AlertTrigger;
  environment: string | null;
}

const MINUTE = 60_000;
/** The longest window (LIMITS.alertRules.minutes.max): older buckets go. */
const KEEP_MINUTES = 1_440;

export function createAlertRuleEvaluation(deps: AlertRulesDeps): AlertRuleEvaluation {
  const log = deps.logger.child({ component: 'alert-rules' });

  async function afterBatch(changes: GroupChange[], accepted: EnvironmentStampedEvent[]): Promise<void> {
    try {
      if (!accepted.length) return;
      const now = deps.clock.now();
      // 1. rules
      const byProject = await projectRules(deps.db, [...new Set(accepted.map((e) => e.projectId))], now);
      const ruled = new Map<string, AlertRule[]>();
      for (const [projectId, r] of byProject) if (r.kind === 'rules' && r.rules.length) ruled.set(projectId, r.rules);
      if (!ruled.size) return;

      // 2. match
      const eventsOf = new Map<string, EnvironmentStampedEvent[]>();
      for (const e of accepted) {
        if (!ruled.has(e.projectId)) continue;
        const list = eventsOf.get(e.groupId) ?? [];
        list.push(e);
        eventsOf.set(e.groupId, list);
      }
      const changeOf = new Map(changes.map((c) => [c.groupId, c]));
      const candidates: Candidate[] = [];
      const counted: Array<{
        key: RuleGroupKey;
        rule: AlertRule;
        trigger: AlertTrigger & { count: number; minutes: number };
        events: EnvironmentStampedEvent[];
      }> = [];
      for (const [groupId, events] of eventsOf) {
        const projectId = events[0]!.projectId;
        const change = changeOf.get(groupId);
        for (const rule of ruled.get(projectId)!) {
          const matched = events.filter((e) => takes(rule, e.environment, levelOf(e)));
          if (!matched.length) continue;
          const key = { projectId, ruleId: rule.id, groupId };
          const environment = matched.some((e) => e.environment === 'production') ? 'production' : matched[0]!.environment;
          for (const trigger of rule.triggers) {
            if (trigger.type === 'event_frequency' || trigger.type === 'user_frequency') counted.push({ key, rule, trigger, events: matched });
            else if (change && fires(trigger.type, rule, change)) candidates.push({ ...key, rule, trigger, environment });
          }
        }
      }

      // 3. count
      if (counted.length) candidates.push(...(await countFrequencies(counted, now)));
      await claimAndAct(candidates, now);
    } catch (err) {
      log.error({ err }, 'alert rules could not be evaluated for a batch');
    }
  }

  /** 3. count: the batch's matched events and users into their buckets, then each window's total against its N. */
  async function countFrequencies(
    counted: Array<{ key: RuleGroupKey; rule: AlertRule; trigger: AlertTrigger & { count: number; minutes: number }; events: EnvironmentStampedEvent[] }>,
    now: number,
  ): Promise<Candidate[]> {
    const nowMinute = Math.floor(now / MINUTE);
    const pruneBefore = nowMinute - KEEP_MINUTES;
    const eventRows = new Map<string, RuleGroupKey & { minute: number; events: number }>();
    const userRows = new Map<string, RuleGroupKey & { user: string; minute: number }>();
    // A rule with two frequency triggers of one kind counts its events once.
    const seen = new Set<string>();
    for (const c of counted) {
      const once = `${c.trigger.type}\n${keyOf(c.key)}`;
      if (seen.has(once)) continue;
      seen.add(once);
      for (const e of c.events) {
        const minute = Math.floor(e.receivedAt / MINUTE);
        if (c.trigger.type === 'event_frequency') {
          const k = `${keyOf(c.key)}\n${minute}`;
          const row = eventRows.get(k) ?? { ...c.key, minute, events: 0 };
          row.events++;
          eventRows.set(k, row);
        } else {
          const user = userKeyOf(e);
          if (!user) continue;
          const k = `${keyOf(c.key)}\n${user}`;
          const was = userRows.get(k);
          if (!was || was.minute < minute) userRows.set(k, { ...c.key, user, minute });
        }
      }
    }
    await state.addEvents(deps.db, [...eventRows.values()], pruneBefore);
    await state.addUsers(deps.db, [...userRows.values()], pruneBefore);
    const windows = (type: AlertTriggerType) =>
      counted.filter((c) => c.trigger.type === type).map((c) => ({ ...c.key, since: nowMinute - c.trigger.minutes + 1 }));
    const events = await state.eventsSince(deps.db, windows('event_frequency'));
    const users = await state.usersSince(deps.db, windows('user_frequency'));
    return counted.flatMap((c) => {
      const total = (c.trigger.type === 'event_frequency' ? events : users).get(keyOf(c.key)) ?? 0;
      if (total < c.trigger.count) return [];
      const environment = c.events.some((e) => e.environment === 'production') ? 'production' : c.events[0]!.environment;
      return [{ ...c.key, rule: c.rule, trigger: c.trigger, environment }];
    });
  }

  /** 4. claim, 5. act: one fire per (rule, issue), the first trigger that fired named. */
  async function claimAndAct(candidates: Candidate[], now: number): Promise<void> {
    const first = new Map<string, Candidate>();
    for (const c of candidates) if (!first.has(keyOf(c))) first.set(keyOf(c), c);
    if (!first.size) return;
    const claimed = await state.claimFires(deps.db, [...first.values()], now);
    const fired = [...first.values()].filter((c) => claimed.has(keyOf(c)));
    const byProject = new Map<string, Candidate[]>();
    for (const c of fired) byProject.set(c.projectId, [...(byProject.get(c.projectId) ?? []), c]);
    for (const [projectId, list] of byProject) {
      try {
        await act(projectId, list, now);
      } catch (err) {
        log.error({ err, projectId }, 'an alert rule fired but its actions failed');
      }
    }
  }

  async function act(projectId: string, fired: Candidate[], now: number): Promise<void> {
    const facts = new Map((await issueEventsRepository.facts(deps.db, projectId, [...new Set(fired.map((c) => c.groupId))])).map((f) => [f.id, f]));
    const deployIds = [...new Set(fired.flatMap((c) => deployIdOf(facts.get(c.groupId), asIssueEvent(c)) ?? []))];
    const deploys: Deploys = new Map((await issueEventsRepository.deploys(deps.db, projectId, deployIds)).map((d) => [d.id, d]));
    const mailing = fired.some((c) => c.rule.actions.email) && (await state.emailEnabled(deps.db, projectId));
    const to = mailing ? await alertRecipients(deps.db, projectId) : [];
    for (const c of fired) {
      const f = facts.get(c.groupId);
      if (!f) continue;
      const data = alertData(f, c, deploys, deps.publicBaseUrl);
      if (c.rule.actions.endpointIds.length)
        await publishProjectEvent(
          { bus: deps.bus, clock: deps.clock },
          { id: `issue.alert:${c.ruleId}:${c.groupId}:${now}`, projectId, event: 'issue.alert', data, endpointIds: c.rule.actions.endpointIds },
        );
      if (c.rule.actions.email && to.length) {
        try {
          await deps.mailer.send(alertMail(to, f, c, data.url));
        } catch (err) {
          log.error({ err, groupId: c.groupId, ruleId: c.ruleId }, 'alert rule mail failed');
        }
      }
    }
  }

  async function evaluateEscalation(items: EscalatingItem[]): Promise<void> {
    try {
      if (!items.length) return;
      const now = deps.clock.now();
      const byProject = await projectRules(deps.db, [...new Set(items.map((i) => i.projectId))], now);
      const candidates: Candidate[] = [];
      for (const item of items) {
        const r = byProject.get(item.projectId);
        if (r?.kind !== 'rules') continue;
        for (const rule of r.rules) {
          const trigger = rule.triggers.find((t) => t.type === 'escalation');
          // No event here: the level filter has nothing to read; the environment is the sweep's.
          if (trigger && (!rule.environments.length || rule.environments.includes(item.environment as never)))
            candidates.push({ projectId: item.projectId, ruleId: rule.id, groupId: item.groupId, rule, trigger, environment: item.environment });
        }
      }
      await claimAndAct(candidates, now);
    } catch (err) {
      log.error({ err }, 'alert rules could not be evaluated for escalating issues');
    }
  }

  return { afterBatch, evaluateEscalation };
}

/** Whether a rule's filters take an event of this environment and level (empty lists take all). */
function takes(rule: AlertRule, environment: string, level: ErrorLevel): boolean {
  return (!rule.environments.length || rule.environments.includes(environment as never)) && (!rule.levels.length || rule.levels.includes(level));
}

function fires(type: AlertTriggerType, rule: AlertRule, c: GroupChange): boolean {
  if (type === 'regression') return c.regressed;
  if (type !== 'new_issue') return false;
  const looksAtProduction = rule.environments.includes('production');
  return c.created || (looksAtProduction && c.firstInProduction);
}

const levelOf = (e: EnvironmentStampedEvent): ErrorLevel => e.event.context?.level ?? 'error';

/** The event's user for user_frequency: its id, else e-mail, username or IP address, hashed (no personal data kept). */
function userKeyOf(e: EnvironmentStampedEvent): string | undefined {
  const u = e.event.context?.user;
  const id = u?.id ?? e.event.userId;
  const key = id ? `id:${id}` : u?.email ? `email:${u.email}` : u?.username ? `name:${u.username}` : u?.ipAddress ? `ip:${u.ipAddress}` : undefined;
  return key && createHash('sha256').update(key).digest('base64url').slice(0, 22);
}

const TRIGGER_TEXT: Record<AlertTriggerType, string> = {
  new_issue: 'New issue',
  regression: 'Regression',
  escalation: 'Escalating issue',
  event_frequency: 'Frequent issue',
  user_frequency: 'Issue affecting many users',
};

function triggerText(t: AlertTrigger): string {
  if (t.type === 'event_frequency') return `${t.count} events or more in ${t.minutes} minutes`;
  if (t.type === 'user_frequency') return `${t.count} users or more in ${t.minutes} minutes`;
  return TRIGGER_TEXT[t.type].toLowerCase();
}

/** `issue.alert`'s data: the issue as issue.* events show it (the trigger's deploy), and the rule with the trigger that fired. */
function alertData(f: IssueEventFacts, c: Candidate, deploys: Deploys, publicBaseUrl: string) {
  return {
    ...issueEventData(f, asIssueEvent(c), deploys, publicBaseUrl),
    alert: { rule: { id: c.rule.id, name: c.rule.name }, trigger: c.trigger, throttleMinutes: c.rule.throttleMinutes },
  };
}

type Deploys = Map<string, { id: string; git_sha: string | null; branch: string | null }>;

/** The issue event a trigger stands closest to: its deploy is the one the alert names (first seen, regressed in, last seen). */
function asIssueEvent(c: Candidate): IssueEventItem {
  const event = c.trigger.type === 'new_issue' ? 'issue.created' : c.trigger.type === 'regression' ? 'issue.regressed' : 'issue.escalating';
  return { groupId: c.groupId, event, environment: c.environment };
}

function alertMail(to: string[], f: IssueEventFacts, c: Candidate, url: string) {
  const what = TRIGGER_TEXT[c.trigger.type];
  const where = c.environment ? ` in ${c.environment}` : '';
  const message = f.message.length > 120 ? `${f.message.slice(0, 119)}…` : f.message;
  const envCount = c.environment ? Number(f.env_counts?.[c.environment] ?? 0) : undefined;
  const text = [
    `${what}${where} in project ${f.project_name} (${f.slug}), alert rule "${c.rule.name}": ${triggerText(c.trigger)}.`,
    '',
    `Error: ${f.name}: ${f.message}`,
    `Occurrences: ${Number(f.count)} in all${envCount !== undefined ? `, ${envCount} in ${c.environment}` : ''}`,
    `First frame of your code: ${f.culprit ?? 'none found in the stack'}`,
    '',
    `Open the issue: ${url}`,
    '',
    `At most one email per issue from this rule every ${c.rule.throttleMinutes} minutes. Ignore the issue to stop these emails.`,
  ].join('\n');
  return { to, subject: `[${f.project_name}] ${what}${where}: ${f.name}: ${message}`, text };
}
