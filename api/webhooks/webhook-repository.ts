import type { Queryable } from '../../platform/ports/relational-store.ts';
import { newId, newToken } from '../../platform/tokens.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { TOKEN_PREFIX } from '../../schemas/scopes.ts';
import type { Attempt, Delivery, Endpoint, PatchEndpointBody, WebhookFormat } from '../../schemas/api/webhooks.ts';

/**
 * Project webhook endpoints and their delivery log, for the console routes (spec §4.3). The
 * processor (processor/webhooks) owns sending; this side creates, changes, lists and replays.
 * Secrets are stored readable because every send signs with them; they leave the API only in the
 * answers to create and rotate-secret.
 */

const iso = (t: unknown) => new Date(t as Date).toISOString();

function mapEndpoint(r: Record<string, unknown>, now: number): Endpoint {
  const until = r.previous_secret_until == null ? null : new Date(r.previous_secret_until as Date).getTime();
  return {
    id: r.id as string,
    url: r.url as string,
    format: ((r.format as WebhookFormat | undefined) ?? 'standard') as WebhookFormat,
    description: (r.description as string) ?? '',
    events: (r.events as string[]) ?? [],
    maxAttempts: Number(r.max_attempts),
    createdAt: iso(r.created_at),
    updatedAt: iso(r.updated_at),
    previousSecretExpiresAt: until !== null && until > now ? iso(until) : null,
  };
}

const COLS = 'id, url, format, description, events, max_attempts, created_at, updated_at, previous_secret_until';

function mapDelivery(r: Record<string, unknown>): Delivery {
  return {
    id: r.id as string,
    endpointId: r.endpoint_id as string,
    eventId: r.event_id as string,
    event: r.event as string,
    status: r.status as string,
    attempts: Number(r.attempts),
    maxAttempts: Number(r.max_attempts),
    nextAttemptAt: iso(r.next_attempt_at),
    lastError: (r.last_error as string | null) ?? null,
    lastResponseCode: r.last_response_code == null ? null : Number(r.last_response_code),
    createdAt: iso(r.created_at),
    updatedAt: iso(r.updated_at),
  };
}

/** Endpoints, their delivery log, replays and secret rotation (spec §4.3). */
export const webhooksRepository = {
  async createEndpoint(
    db: Queryable,
    e: { projectId: string; url: string; format: WebhookFormat; events: string[]; maxAttempts: number; description: string },
    now: number,
  ): Promise<{ endpoint: Endpoint; secret: string }> {
    const id = newId('whk_');
    const secret = newToken(TOKEN_PREFIX.webhookSecret);
    const { rows } = await db.query<Record<string, unknown>>(
      `INSERT INTO webhook_endpoints (id, project_id, url, description, events, max_attempts, secret, created_at, updated_at, format)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $9) RETURNING ${COLS}`,
      [id, e.projectId, e.url, e.description, e.events, e.maxAttempts, secret, new Date(now), e.format],
    );
    return { endpoint: mapEndpoint(rows[0], now), secret };
  },

  async listEndpoints(db: Queryable, projectId: string, now: number): Promise<Endpoint[]> {
    const { rows } = await db.query<Record<string, unknown>>(`SELECT ${COLS} FROM webhook_endpoints WHERE project_id = $1 ORDER BY created_at, id`, [
      projectId,
    ]);
    return rows.map((r) => mapEndpoint(r, now));
  },

  async getEndpoint(db: Queryable, projectId: string, id: string, now: number): Promise<Endpoint | null> {
    const { rows } = await db.query<Record<string, unknown>>(`SELECT ${COLS} FROM webhook_endpoints WHERE project_id = $1 AND id = $2`, [projectId, id]);
    return rows[0] ? mapEndpoint(rows[0], now) : null;
  },

  async updateEndpoint(db: Queryable, projectId: string, id: string, patch: PatchEndpointBody, now: number): Promise<Endpoint | null> {
    const { rows } = await db.query<Record<string, unknown>>(
      `UPDATE webhook_endpoints SET
         url = COALESCE($3, url), events = COALESCE($4::text[], events), max_attempts = COALESCE($5::int, max_attempts),
         description = COALESCE($6, description), updated_at = $7, format = COALESCE($8, format)
       WHERE project_id = $1 AND id = $2 RETURNING ${COLS}`,
      [projectId, id, patch.url ?? null, patch.events ?? null, patch.maxAttempts ?? null, patch.description ?? null, new Date(now), patch.format ?? null],
    );
    return rows[0] ? mapEndpoint(rows[0], now) : null;
  },

  async deleteEndpoint(db: Queryable, projectId: string, id: string): Promise<boolean> {
    const { rowCount } = await db.query('DELETE FROM webhook_endpoints WHERE project_id = $1 AND id = $2', [projectId, id]);
    return rowCount > 0;
  },

  /** New secret now; the previous one keeps signing for 24 h (receivers switch without losing events). */
  async rotateSecret(db: Queryable, projectId: string, id: string, now: number): Promise<{ endpoint: Endpoint; secret: string } | null> {
    const secret = newToken(TOKEN_PREFIX.webhookSecret);
    const { rows } = await db.query<Record<string, unknown>>(
      `UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_until = $4, secret = $3, updated_at = $5
       WHERE project_id = $1 AND id = $2 RETURNING ${COLS}`,
      [projectId, id, secret, new Date(now + LIMITS.webhook.rotationOverlapMs), new Date(now)],
    );
    return rows[0] ? { endpoint: mapEndpoint(rows[0], now), secret } : null;
  },

  /** The endpoint's last 100 attempts, newest first (older ones are pruned as new ones are recorded). */
  async listAttempts(db: Queryable, endpointId: string): Promise<Attempt[]> {
    const { rows } = await db.query<Record<string, unknown>>(
      `SELECT a.delivery_id, d.event_id, d.event, a.attempt, a.status, a.response_code, a.error, a.started_at, a.finished_at, a.next_attempt_at, d.status AS delivery_status,
              CASE WHEN d.status = 'pending' THEN d.next_attempt_at END AS delivery_next_attempt_at
       FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
       WHERE a.endpoint_id = $1 ORDER BY a.id DESC LIMIT $2`,
      [endpointId, LIMITS.webhook.deliveryLogPerEndpoint],
    );
    return rows.map((r) => ({
      deliveryId: r.delivery_id as string,
      eventId: r.event_id as string,
      event: r.event as string,
      attempt: Number(r.attempt),
      status: r.status as 'succeeded' | 'failed',
      responseCode: r.response_code == null ? null : Number(r.response_code),
      error: (r.error as string | null) ?? null,
      startedAt: iso(r.started_at),
      finishedAt: iso(r.finished_at),
      nextAttemptAt: r.next_attempt_at == null ? null : iso(r.next_attempt_at),
      deliveryStatus: r.delivery_status as string,
      deliveryNextAttemptAt: r.delivery_next_attempt_at == null ? null : iso(r.delivery_next_attempt_at),
    }));
  },

  /**
   * Back to pending, due now, with a fresh budget (the endpoint's current maxAttempts); same id, so
   * receivers that already processed it can tell. A delivery being sent right now is left alone
   * ('sending'). Inbox deliveries are not project webhooks and are not found here.
   */
  async replayDelivery(db: Queryable, projectId: string, id: string, now: number): Promise<Delivery | 'sending' | null> {
    const { rows } = await db.query<Record<string, unknown>>(
      `UPDATE webhook_deliveries d SET status = 'pending', attempts = 0, max_attempts = e.max_attempts, next_attempt_at = $3,
         lease_until = NULL, lease_token = NULL, updated_at = $3
       FROM webhook_endpoints e
       WHERE d.id = $2 AND d.project_id = $1 AND d.endpoint_id = e.id AND d.status <> 'sending'
       RETURNING d.*`,
      [projectId, id, new Date(now)],
    );
    if (rows[0]) return mapDelivery(rows[0]);
    const { rows: exists } = await db.query('SELECT status FROM webhook_deliveries WHERE id = $1 AND project_id = $2 AND endpoint_id IS NOT NULL', [
      id,
      projectId,
    ]);
    return exists.length ? 'sending' : null;
  },
};
