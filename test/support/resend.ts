import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { Webhook } from 'svix';

/**
 * POST a Resend event to `/v1/webhooks/email` as Resend does: Svix headers, signed by Svix's own library with `secret`.
 * `id` is the delivery id (svix-id); the same id twice is a provider's redelivery.
 */
export async function postResendEvent(app: FastifyInstance, secret: string, type: string, data: Record<string, unknown>, id = `msg_${randomUUID()}`) {
  const body = JSON.stringify({ type, created_at: new Date().toISOString(), data });
  const now = new Date();
  const res = await app.inject({
    method: 'POST',
    url: '/v1/webhooks/email',
    headers: {
      'content-type': 'application/json',
      'svix-id': id,
      'svix-timestamp': String(Math.floor(now.getTime() / 1000)),
      'svix-signature': new Webhook(secret).sign(id, now, body),
    },
    payload: body,
  });
  return { status: res.statusCode, id };
}
