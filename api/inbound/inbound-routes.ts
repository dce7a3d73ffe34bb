import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Config } from '../../platform/config.ts';
import type { Platform } from '../../platform/platform.ts';
import type { InboundHealth } from '../../schemas/api/inbound.ts';
import * as inboundEvents from '../../schemas/bus/inbound-events.ts';
import { ServiceError, UNAVAILABLE_RETRY_AFTER_SEC } from '../../schemas/error-codes.ts';
import { INBOUND_PROVIDERS, INBOUND_REFUSALS, INBOUND_ROUTES, type InboundProvider, type InboundRefusal } from '../../schemas/inbound.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { AUTH } from '../auth/route-auth.ts';
import { declared } from '../declared-route.ts';
import { inboundRepository } from './inbound-repository.ts';
import { verifyGithub } from './verify/github.ts';
import type { Headers, Verification } from './verify/signatures.ts';
import { verifyResend } from './verify/resend.ts';
import { verifyStripe } from './verify/stripe.ts';

/**
 * The four inbound provider routes (spec §4.2, §5.2 rule 6): `POST /v1/webhooks/code_host` (GitHub), `/payments` and
 * `/payments/connect` (Stripe: the platform's own billing, and connected accounts), `/email` (Resend). One receiving
 * shape for all four:
 *   1. rate limit per caller IP                                          429 rate_limited
 *   2. the raw body (never re-serialised) verified the provider's way    401 invalid_signature, counted by reason
 *      with the secrets of configuration (several during a rotation)
 *   3. the delivery id remembered; a replay answers 200 and changes nothing
 *   4. handed to the processor on the bus (processor/inbound/)           503 when the bus is away (the provider retries)
 *   5. 200 { received }: acknowledged before any work is done
 * GitHub's `ping` is answered at step 3 and goes no further.
 */
const MINUTE_MS = 60_000;

const SECRETS: Record<InboundProvider, (c: Config) => string[]> = {
  github: (c) => c.GITHUB_WEBHOOK_SECRETS,
  stripe: (c) => c.STRIPE_WEBHOOK_SECRETS,
  stripe_connect: (c) => c.STRIPE_CONNECT_WEBHOOK_SECRETS,
  resend: (c) => c.RESEND_WEBHOOK_SECRETS,
};

export function verifyDelivery(provider: InboundProvider, headers: Headers, raw: Buffer, secrets: string[], nowSec: number): Verification {
  if (!secrets.length)
    return { ok: false, reason: 'no_secret_configured', message: `no signing secret is configured for ${provider}: every delivery is refused` };
  switch (provider) {
    case 'github':
      return verifyGithub(headers, raw, secrets);
    case 'stripe':
    case 'stripe_connect':
      return verifyStripe(headers, raw, secrets, nowSec);
    case 'resend':
      return verifyResend(headers, raw, secrets, nowSec);
  }
}

export function inboundRoutes(platform: Pick<Platform, 'db' | 'bus' | 'clock' | 'limiter' | 'config' | 'logger'>): FastifyPluginAsyncZod {
  const { db, bus, clock, limiter, config } = platform;
  const log = platform.logger.child({ component: 'inbound-webhooks' });
  const counts = Object.fromEntries(
    INBOUND_PROVIDERS.map((p) => [
      p,
      { accepted: 0, duplicates: 0, refused: Object.fromEntries(INBOUND_REFUSALS.map((r) => [r, 0])) as Record<InboundRefusal, number> },
    ]),
  ) as Record<InboundProvider, { accepted: number; duplicates: number; refused: Record<InboundRefusal, number> }>;

  return async (app) => {
    // This plugin's own parsers: every body as raw bytes, whatever its type (the signature is over exactly what was sent).
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: LIMITS.inbound.maxBodyBytes }, (_request, body, done) => done(null, body));

    for (const provider of INBOUND_PROVIDERS) {
      app.route({
        ...declared(INBOUND_ROUTES[provider]),
        config: { auth: AUTH.public },
        handler: async (request) => {
          // 1. rate limit per caller IP
          const rate = await limiter.hit(`inbound:ip:${request.ip}`, LIMITS.inbound.perIpPerMinute, MINUTE_MS);
          if (!rate.allowed) {
            counts[provider].refused.rate_limited++;
            throw new ServiceError('rate_limited', 'too many deliveries from this address', { retryAfterSec: rate.retryAfterSec });
          }
          // 2. verify
          const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
          const now = clock.now();
          const v = verifyDelivery(provider, request.headers, raw, SECRETS[provider](config), Math.floor(now / 1000));
          if (!v.ok) {
            counts[provider].refused[v.reason]++;
            log.warn({ provider, reason: v.reason }, 'inbound delivery refused');
            throw new ServiceError('invalid_signature', v.message);
          }
          // 3. remember; a replay changes nothing
          if (!(await inboundRepository.remember(db, provider, v.deliveryId, v.event, now))) {
            counts[provider].duplicates++;
            return { received: true as const, duplicate: true };
          }
          if (provider === 'github' && v.event === 'ping') {
            counts[provider].accepted++;
            return { received: true as const, duplicate: false };
          }
          // 4. hand over
          try {
            const message = inboundEvents.encode({ v: 1, provider, deliveryId: v.deliveryId, event: v.event, receivedAt: now, payload: v.payload });
            await bus.publish(inboundEvents.TOPIC, [{ key: `${provider}:${v.deliveryId}`, value: message }]);
          } catch (err) {
            await inboundRepository.forget(db, provider, v.deliveryId).catch(() => undefined);
            log.error({ err, provider }, 'inbound delivery could not be handed to the bus');
            throw new ServiceError('unavailable', 'temporarily unavailable; the provider retries', { retryAfterSec: UNAVAILABLE_RETRY_AFTER_SEC });
          }
          counts[provider].accepted++;
          // 5. acknowledge
          return { received: true as const, duplicate: false };
        },
      });
    }

    app.route({
      ...declared('inboundHealth'),
      config: { auth: AUTH.public },
      handler: async (): Promise<InboundHealth> => ({
        providers: Object.fromEntries(
          INBOUND_PROVIDERS.map((p) => [p, { configured: SECRETS[p](config).length > 0, ...counts[p] }]),
        ) as InboundHealth['providers'],
      }),
    });
  };
}
