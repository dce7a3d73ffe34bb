import { createHash, randomUUID } from 'node:crypto';
import type { Queryable, RelationalStore } from '../../platform/ports/relational-store.ts';
import { LIMITS } from '../../schemas/limits.ts';
import type { ProjectEvent } from '../../schemas/project-events.ts';
import { signingSecrets } from './webhook-signature.ts';

/**
 * Delivery rows for the webhook dispatcher (platform/migrations/relational/0003_webhooks.sql; times are timestamptz
 * since 0017, written from the platform clock as Dates), and what it reads of their targets (webhook_endpoints, inboxes).
 *
 * A delivery is claimed by a lease: one UPDATE turns `pending` (due) or `sending` (lease ran out:
 * the sender died mid-send) into `sending` with `lease_until` and a fresh `lease_token`, choosing
 * rows with `FOR UPDATE SKIP LOCKED`, so processors sweeping at once split the work and never send
 * one delivery twice. Finishing an attempt only applies while the lease token is still ours.
 */

/** Long enough for the 10 s attempt and a slow database round trip; short enough to retry a crash soon. */
export const LEASE_MS = 60_000;

export interface Target {
  kind: 'endpoint' | 'inbox';
  id: string;
  maxAttempts: number;
}

export interface ClaimedDelivery {
  id: string;
  projectId: string;
  endpointId: string | null;
  inboxId: string | null;
  eventId: string;
  event: string;
  data: Record<string, unknown>;
  attempts: number;
  maxAttempts: number;
  attemptSeq: number;
  leaseToken: string;
}

export interface SendTarget {
  url: string | null;
  secrets: string[];
  /** The endpoint's message shape (0035_webhook_formats.sql); an inbox's webhook is always standard. */
  format?: 'standard' | 'slack' | 'discord';
}

/** The delivery id is derived from the event and the target, so a re-delivered bus message inserts nothing new. */
export const deliveryId = (eventId: string, targetId: string): string =>
  'dlv_' + createHash('sha256').update(`${eventId}\n${targetId}`).digest('hex').slice(0, 32);

const n = (v: unknown): number => Number(v);

async function insertRows(
  db: Queryable,
  items: Array<{ event: ProjectEvent; target: Target }>,
  now: number,
  claim: { token: string; leaseUntil: Date } | undefined,
): Promise<Array<Record<string, unknown>>> {
  if (!items.length) return [];
  const params: unknown[] = claim ? [new Date(now), claim.leaseUntil, claim.token] : [new Date(now)];
  const state = claim ? `'sending', 0, $2::timestamptz, $3, 1` : `'pending', 0, NULL, NULL, 0`;
  const rows = items.map(({ event: ev, target: t }) => {
    params.push(
      deliveryId(ev.id, t.id),
      ev.projectId,
      t.kind === 'endpoint' ? t.id : null,
      t.kind === 'inbox' ? t.id : null,
      ev.id,
      ev.event,
      JSON.stringify(ev.data),
      t.maxAttempts,
    );
    const i = params.length - 8;
    return `($${i + 1}, $${i + 2}, $${i + 3}, $${i + 4}, $${i + 5}, $${i + 6}, $${i + 7}::jsonb, ${state}, $${i + 8}::int, $1::timestamptz, $1::timestamptz, $1::timestamptz)`;
  });
  const { rows: inserted } = await db.query<Record<string, unknown>>(
    `INSERT INTO webhook_deliveries AS d (id, project_id, endpoint_id, inbox_id, event_id, event, data, status, attempts, lease_until, lease_token, attempt_seq, max_attempts, next_attempt_at, created_at, updated_at)
     VALUES ${rows.join(', ')}
     ON CONFLICT (id) DO NOTHING ${claim ? CLAIM_RETURNING : 'RETURNING d.id'}`,
    params,
  );
  return inserted;
}

const CLAIM_RETURNING = `RETURNING d.id, d.project_id, d.endpoint_id, d.inbox_id, d.event_id, d.event, d.data, d.attempts, d.max_attempts, d.attempt_seq, d.lease_token`;

function mapClaimed(r: Record<string, unknown>): ClaimedDelivery {
  return {
    id: r.id as string,
    projectId: r.project_id as string,
    endpointId: (r.endpoint_id as string | null) ?? null,
    inboxId: (r.inbox_id as string | null) ?? null,
    eventId: r.event_id as string,
    event: r.event as string,
    data: (typeof r.data === 'string' ? JSON.parse(r.data) : r.data) as Record<string, unknown>,
    attempts: n(r.attempts),
    maxAttempts: n(r.max_attempts),
    attemptSeq: n(r.attempt_seq),
    leaseToken: r.lease_token as string,
  };
}

export interface AttemptOutcome {
  ok: boolean;
  status?: number;
  error?: string;
  startedAt: number;
  finishedAt: number;
  /** For a failure with attempts left: when the next one is due. */
  nextAttemptAt?: number;
}

export type Finished = 'succeeded' | 'pending' | 'dead' | null;

export const deliveriesRepository = {
  /** The project's endpoints, with the events each subscribes to. */
  async endpointsOf(db: Queryable, projectId: string): Promise<Array<{ id: string; events: string[]; maxAttempts: number }>> {
    const r = await db.query<{ id: string; events: string[] | null; max_attempts: number }>(
      'SELECT id, events, max_attempts FROM webhook_endpoints WHERE project_id = $1',
      [projectId],
    );
    return r.rows.map((x) => ({ id: x.id, events: x.events ?? [], maxAttempts: Number(x.max_attempts) }));
  },

  /** Whether the inbox is the project's and has a webhook to deliver its mail to. */
  async inboxHasWebhook(db: Queryable, inboxId: string, projectId: string): Promise<boolean> {
    const r = await db.query('SELECT id FROM inboxes WHERE id = $1 AND project_id = $2 AND webhook_url IS NOT NULL AND webhook_secret IS NOT NULL', [
      inboxId,
      projectId,
    ]);
    return r.rows.length > 0;
  },

  /** Insert one delivery per (event, target), idempotently, in one statement. Returns the ids that were new. */
  async insert(db: Queryable, items: Array<{ event: ProjectEvent; target: Target }>, now: number): Promise<string[]> {
    return (await insertRows(db, items, now, undefined)).map((r) => r.id as string);
  },

  /**
   * `insert` for the prompt first attempt: the new rows are inserted already claimed (leased to the caller,
   * attempt 1), in the same statement, and come back as claimed deliveries; rows that existed (a re-delivered event)
   * are neither changed nor returned. A sender that dies before its attempt leaves them to the sweep once the lease
   * runs out, as for any claim.
   */
  async insertClaimed(db: Queryable, items: Array<{ event: ProjectEvent; target: Target }>, now: number): Promise<ClaimedDelivery[]> {
    return (await insertRows(db, items, now, { token: randomUUID(), leaseUntil: new Date(now + LEASE_MS) })).map(mapClaimed);
  },

  /**
   * Claim up to `limit` deliveries that are due now: first those whose lease ran out (interrupted
   * mid-send), then pending ones by due time. (Fresh deliveries are claimed as they are inserted:
   * insertClaimed.)
   */
  async claimDue(db: RelationalStore, now: number, limit: number): Promise<ClaimedDelivery[]> {
    const token = randomUUID();
    const at = new Date(now);
    const leaseUntil = new Date(now + LEASE_MS);
    const claim = (where: string, order: string, max: number) =>
      db.query<Record<string, unknown>>(
        `WITH due AS (
           SELECT id FROM webhook_deliveries
           WHERE ${where}
           ORDER BY ${order}
           LIMIT $2
           FOR UPDATE SKIP LOCKED
         )
         UPDATE webhook_deliveries d
         SET status = 'sending', lease_until = $3::timestamptz, lease_token = $4, attempt_seq = d.attempt_seq + 1, updated_at = $1::timestamptz
         FROM due WHERE d.id = due.id
         ${CLAIM_RETURNING}`,
        [at, max, leaseUntil, token],
      );
    const expired = await claim(`status = 'sending' AND lease_until <= $1`, 'lease_until', limit);
    const left = limit - expired.rows.length;
    const due = left > 0 ? await claim(`status = 'pending' AND next_attempt_at <= $1`, 'next_attempt_at', left) : { rows: [] };
    return [...expired.rows, ...due.rows].map(mapClaimed);
  },

  /**
   * Hand a claimed delivery back without an attempt (its receiver was busy past the wait the lease allows): pending
   * again at `dueAt`, its attempt number as it was. Only while our lease holds.
   */
  async release(db: Queryable, d: ClaimedDelivery, dueAt: number, now: number): Promise<void> {
    await db.query(
      `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = $3::timestamptz, lease_until = NULL, lease_token = NULL,
              attempt_seq = attempt_seq - 1, updated_at = $4::timestamptz
        WHERE id = $1 AND lease_token = $2`,
      [d.id, d.leaseToken, new Date(dueAt), new Date(now)],
    );
  },

  /** Where a claimed delivery goes right now: the endpoint's current URL and signing secrets. */
  async sendTarget(db: Queryable, d: ClaimedDelivery, now: number): Promise<SendTarget> {
    if (d.endpointId) {
      const { rows } = await db.query<Record<string, unknown>>(
        'SELECT url, secret, previous_secret, previous_secret_until, format FROM webhook_endpoints WHERE id = $1',
        [d.endpointId],
      );
      const r = rows[0];
      if (!r) return { url: null, secrets: [] };
      return {
        url: r.url as string,
        secrets: signingSecrets(r.secret as string, r.previous_secret as string | null, r.previous_secret_until, now),
        format: (r.format as SendTarget['format']) ?? 'standard',
      };
    }
    const { rows } = await db.query<Record<string, unknown>>(
      'SELECT webhook_url, webhook_secret, webhook_previous_secret, webhook_previous_secret_until FROM inboxes WHERE id = $1',
      [d.inboxId],
    );
    const r = rows[0];
    if (!r || !r.webhook_url || !r.webhook_secret) return { url: null, secrets: [] };
    return {
      url: r.webhook_url as string,
      secrets: signingSecrets(r.webhook_secret as string, r.webhook_previous_secret as string | null, r.webhook_previous_secret_until, now),
    };
  },

  /**
   * Record an attempt and move the delivery on: succeeded, pending again (retry scheduled), or dead
   * (budget used). Applies only while our lease holds; returns the new status, or null when the
   * lease was lost (another processor took the delivery over) and nothing was written.
   */
  async finishAttempt(db: Queryable, d: ClaimedDelivery, o: AttemptOutcome): Promise<'succeeded' | 'pending' | 'dead' | null> {
    return (await deliveriesRepository.finishAttempts(db, [{ d, o }]))[0]!;
  },

  /**
   * finishAttempt for many attempts in two statements: one moves every delivery on (each only while its lease holds)
   * and logs its attempt; the second prunes the logs of the targets touched to their last 100 (§9), seeing the new rows.
   * The dispatcher records attempts as they finish in groups (attempt-recorder.ts), so a busy processor pays two
   * round trips and one commit per group instead of one per delivery. Statuses come back in the order given.
   */
  async finishAttempts(db: Queryable, items: Array<{ d: ClaimedDelivery; o: AttemptOutcome }>): Promise<Finished[]> {
    if (!items.length) return [];
    const rows = items.map(({ d, o }) => {
      const used = d.attempts + 1;
      const status = o.ok ? 'succeeded' : used >= d.maxAttempts ? 'dead' : 'pending';
      const next = status === 'pending' ? (o.nextAttemptAt ?? o.finishedAt) : null;
      return {
        id: d.id,
        lease_token: d.leaseToken,
        status,
        attempts: used,
        next_attempt_at: next === null ? null : new Date(next).toISOString(),
        last_error: o.ok ? null : (o.error ?? 'failed'),
        response_code: o.status ?? null,
        finished_at: new Date(o.finishedAt).toISOString(),
        started_at: new Date(o.startedAt).toISOString(),
        endpoint_id: d.endpointId,
        inbox_id: d.inboxId,
        attempt: d.attemptSeq,
        attempt_status: o.ok ? 'succeeded' : 'failed',
      };
    });
    const { rows: moved } = await db.query<{ id: string; status: string }>(
      `WITH input AS (
         SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(id text, lease_token text, status text, attempts int, next_attempt_at timestamptz,
           last_error text, response_code int, finished_at timestamptz, started_at timestamptz, endpoint_id text, inbox_id text, attempt int,
           attempt_status text)
       ), upd AS (
         UPDATE webhook_deliveries d
         SET status = i.status, attempts = i.attempts, next_attempt_at = COALESCE(i.next_attempt_at, d.next_attempt_at), lease_until = NULL,
             lease_token = NULL, last_error = i.last_error, last_response_code = i.response_code, updated_at = i.finished_at
         FROM input i WHERE d.id = i.id AND d.lease_token = i.lease_token
         RETURNING d.id, d.status
       ), ins AS (
         INSERT INTO webhook_attempts (delivery_id, endpoint_id, inbox_id, attempt, status, response_code, error, started_at, finished_at, next_attempt_at)
         SELECT i.id, i.endpoint_id, i.inbox_id, i.attempt, i.attempt_status, i.response_code, i.last_error, i.started_at, i.finished_at, i.next_attempt_at
           FROM input i JOIN upd u ON u.id = i.id
         RETURNING 1
       )
       SELECT id, status FROM upd`,
      [JSON.stringify(rows)],
    );
    const done = new Map(moved.map((r) => [r.id, r.status as Finished]));
    const endpoints = [...new Set(items.filter(({ d }) => d.endpointId && done.has(d.id)).map(({ d }) => d.endpointId!))];
    const inboxes = [...new Set(items.filter(({ d }) => d.inboxId && done.has(d.id)).map(({ d }) => d.inboxId!))];
    if (endpoints.length || inboxes.length)
      await db.query(
        `DELETE FROM webhook_attempts a USING (
           SELECT 'endpoint' AS kind, t AS target, (SELECT id FROM webhook_attempts WHERE endpoint_id = t ORDER BY id DESC OFFSET $3::int LIMIT 1) AS cutoff
             FROM unnest($1::text[]) t
           UNION ALL
           SELECT 'inbox', t, (SELECT id FROM webhook_attempts WHERE inbox_id = t ORDER BY id DESC OFFSET $3::int LIMIT 1) FROM unnest($2::text[]) t
         ) c
         WHERE c.cutoff IS NOT NULL AND a.id <= c.cutoff
           AND ((c.kind = 'endpoint' AND a.endpoint_id = c.target) OR (c.kind = 'inbox' AND a.inbox_id = c.target))`,
        [endpoints, inboxes, LIMITS.webhook.deliveryLogPerEndpoint],
      );
    return items.map(({ d }) => done.get(d.id) ?? null);
  },
};
