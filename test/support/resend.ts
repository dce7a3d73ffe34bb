import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { Webhook } from 'svix';

/** Resend's request: the event's JSON body and the Svix headers that sign it with `secret` (Svix's own library). */
export function resendRequest(secret: string, type: string, data: Record<string, unknown>, id = `msg_${randomUUID()}`) {
  const now = new Date();
  const body = JSON.stringify({ type, created_at: now.toISOString(), data });
  const headers = {
    'content-type': 'application/json',
    'svix-id': id,
    'svix-timestamp': String(Math.floor(now.getTime() / 1000)),
    'svix-signature': new Webhook(secret).sign(id, now, body),
  };
  return { id, body, headers };
}

/** POST a Resend event to `/v1/webhooks/email` as Resend does. `id` is the delivery id: the same id twice is a redelivery. */
export async function postResendEvent(app: FastifyInstance, secret: string, type: string, data: Record<string, unknown>, id?: string) {
  const r = resendRequest(secret, type, data, id);
  const res = await app.inject({ method: 'POST', url: '/v1/webhooks/email', headers: r.headers, payload: r.body });
  return { status: res.statusCode, id: r.id };
}
