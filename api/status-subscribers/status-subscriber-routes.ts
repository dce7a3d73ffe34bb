import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { confirmationMail, mailableAddress, maskedAddress, statusPageUrl, SUBSCRIBER_EVENT_PATTERNS } from '../../domain/status-subscribers/subscriber-mail.ts';
import { statusSubscribersRepository, type SubscriberRow } from '../../domain/status-subscribers/status-subscribers-repository.ts';
import { publicBaseUrl } from '../../platform/config.ts';
import type { Platform } from '../../platform/platform.ts';
import { newId, newToken, tokenHash } from '../../platform/tokens.ts';
import type { StatusSubscriber } from '../../schemas/api/status-subscribers.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { projectOf } from '../auth/auth-plugin.ts';
import { AUTH } from '../auth/route-auth.ts';
import { declared } from '../declared-route.ts';
import { checkedUrl } from '../outbound-url.ts';
import { webhooksRepository } from '../webhooks/webhook-repository.ts';
import { pageOrJson, sendPage, smallPage } from './status-subscriber-pages.ts';

/**
 * Status page subscribers (issue 43). The public side, for anyone reading a status page:
 *   POST /v1/status/:slug/subscribers {email}    sign-up, JSON or a form post (answered with a small HTML page)
 *     1. rate limit   the caller IP's sign-ups an hour                                        429 rate_limited
 *     2. page         a project with a public monitor (else 404, as the status JSON)          404 not_found
 *     3. address      one plain address, lower-cased                                          400 invalid_request
 *     4. page limit   the page's sign-ups an hour, whatever the address (429 rate_limited)
 *     5. quiet cases  suppressed by a bounce or complaint, subscribed already, the page full, or past the address's
 *                     limits (one confirmation mail per address and page every few hours, a few a day to one address
 *                     from every page): no mail, the same answer
 *     6. mail         a pending sign-up with a fresh random token (kept as its hash); the confirmation mail is sent
 *                     after the answer, so new, pending and subscribed addresses answer alike and as fast
 *   GET /v1/status/:slug/subscribers/confirm?token=   the link in that mail: confirmed (HTML or JSON)
 *   GET /v1/status/:slug/unsubscribe?token=           what the link ends, with a button (HTML) or JSON
 *   POST /v1/status/:slug/unsubscribe?token=          ends it at once (RFC 8058 one-click); an unknown token alike
 * Each sign-up's outcome is counted by reason (`signupOutcomes`). The project side (`uptime:read` / `uptime:write`):
 * the list, removal, and webhook subscribers, which are webhook endpoints of the project subscribed to the incident
 * and maintenance events, so the existing pipeline signs, retries and logs their deliveries.
 */
const S = LIMITS.statusSubscribers;
const HOUR_MS = 3_600_000;

export type SignupOutcome =
  | 'mailed'
  | 'ip_limited'
  | 'no_page'
  | 'invalid_address'
  | 'suppressed'
  | 'already_subscribed'
  | 'page_full'
  | 'address_limited'
  | 'page_limited'
  | 'mail_failed';

/** Sign-up outcomes since start, by reason, per platform (tests read them; one API process counts its own). */
const outcomesOf = new WeakMap<object, Partial<Record<SignupOutcome, number>>>();
export function signupOutcomes(platform: object): Readonly<Partial<Record<SignupOutcome, number>>> {
  return outcomesOf.get(platform) ?? {};
}

const SAME_ANSWER = {
  ok: true as const,
  message: 'If the address can take it, a confirmation link is on its way. Nothing is sent until the link is opened.',
};

/** An unsubscribe or confirmation link that names nothing (anymore). */
const linkGone = () => new ServiceError('not_found', 'this link is not valid (anymore): it was used, it ran out, or the subscription ended');

function toSubscriber(r: SubscriberRow): StatusSubscriber {
  return {
    id: r.id,
    kind: r.kind,
    email: r.email,
    url: r.url,
    endpointId: r.endpoint_id,
    status: r.status,
    suppressed: Boolean(r.suppressed),
    createdAt: new Date(r.created_at).toISOString(),
    confirmedAt: r.confirmed_at === null ? null : new Date(r.confirmed_at).toISOString(),
  };
}

export function statusSubscriberRoutes(
  platform: Pick<Platform, 'db' | 'clock' | 'limiter' | 'mailer' | 'config' | 'outbound' | 'logger'>,
): FastifyPluginAsyncZod {
  const { db, clock, limiter } = platform;
  const log = platform.logger.child({ component: 'status-subscribers' });
  const outcomes: Partial<Record<SignupOutcome, number>> = {};
  outcomesOf.set(platform, outcomes);
  const count = (o: SignupOutcome) => (outcomes[o] = (outcomes[o] ?? 0) + 1);
  const base = () => publicBaseUrl(platform.config);

  /** The links' routes share the status routes' budget per caller IP (LIMITS.uptime.statusPerIpPerMinute). */
  async function limitIp(ip: string) {
    const rate = await limiter.hit(`status:ip:${ip}`, LIMITS.uptime.statusPerIpPerMinute, 60_000);
    if (!rate.allowed) throw new ServiceError('rate_limited', 'too many status requests from this address', { retryAfterSec: rate.retryAfterSec });
  }

  /** The page of a public route: its project, or 404 alike for no such project and a project without a public monitor. */
  async function pageOf(rawSlug: string) {
    const page = await statusSubscribersRepository.pageProject(db, rawSlug.toLowerCase());
    if (!page) throw new ServiceError('not_found', 'no such status page');
    return page;
  }

  /** Steps 1-6 of a sign-up: the outcome, or a refusal thrown. */
  async function signUp(ip: string, rawSlug: string, rawEmail: string): Promise<SignupOutcome> {
    // 1. rate limit
    const perIp = await limiter.hit(`status-subscribe:ip:${ip}`, S.perIpPerHour, HOUR_MS);
    if (!perIp.allowed) {
      count('ip_limited');
      throw new ServiceError('rate_limited', 'too many sign-ups from this address; try again later', { retryAfterSec: perIp.retryAfterSec });
    }
    // 2. page
    const page = await pageOf(rawSlug).catch((err) => {
      count('no_page');
      throw err;
    });
    // 3. address
    const email = mailableAddress(rawEmail, S.emailMaxChars);
    if (!email) {
      count('invalid_address');
      throw new ServiceError('invalid_request', 'email: not an e-mail address', { fields: [{ path: 'email', message: 'not an e-mail address' }] });
    }
    // 4. the page's sign-ups an hour, counted for every address alike (a 429 must not tell a subscribed address apart)
    const perPage = await limiter.hit(`status-subscribe:page:${page.id}`, S.perProjectPerHour, HOUR_MS);
    if (!perPage.allowed) {
      count('page_limited');
      throw new ServiceError('rate_limited', 'this status page has taken too many sign-ups this hour; try again later', {
        retryAfterSec: perPage.retryAfterSec,
      });
    }
    // 5. quiet cases, and the address's limits: a refused key spends none of the other
    if (await statusSubscribersRepository.suppressed(db, email)) return 'suppressed';
    const now = clock.now();
    const existing = await statusSubscribersRepository.byEmail(db, page.id, email);
    if (existing?.status === 'confirmed') return 'already_subscribed';
    await statusSubscribersRepository.forgetExpired(db, page.id, now);
    if (!existing && (await statusSubscribersRepository.emailCount(db, page.id)) >= S.perProject) return 'page_full';
    const who = tokenHash(email).slice(0, 32);
    const [perAddress, perAddressAnyPage] = await limiter.hitAll([
      { key: `status-subscribe:address:${page.id}:${who}`, limit: 1, windowMs: S.addressEveryHours * HOUR_MS },
      { key: `status-subscribe:address:${who}`, limit: S.addressPerDay, windowMs: 24 * HOUR_MS },
    ]);
    if (!perAddress!.allowed || !perAddressAnyPage!.allowed) return 'address_limited';
    // 6. mail
    const token = newToken('cxsub_');
    const stored = await statusSubscribersRepository.upsertPending(
      db,
      {
        id: newId('ssb_'),
        projectId: page.id,
        email,
        confirmHash: tokenHash(token),
        expiresAt: now + S.confirmHours * HOUR_MS,
        unsubscribeToken: newToken('cxunsub_'),
      },
      now,
    );
    if (!stored) return 'already_subscribed';
    const mail = confirmationMail(email, { base: base(), slug: page.slug }, token, S.confirmHours);
    // After the answer: how long the mail server takes must not tell a new address from a subscribed one.
    setImmediate(() => {
      platform.mailer.send(mail).catch((err) => {
        count('mail_failed');
        log.warn({ err, project: page.id }, 'a confirmation mail could not be sent');
      });
    });
    return 'mailed';
  }

  return async (app) => {
    // A status page's subscribe form posts without script; one-click unsubscribe posts `List-Unsubscribe=One-Click`.
    app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 4096 }, (_req, body, done) =>
      done(null, Object.fromEntries(new URLSearchParams(String(body)))),
    );

    app.route({
      ...declared('subscribeToStatus'),
      config: { auth: AUTH.public },
      handler: async (request, reply) => {
        await pageOrJson(request, reply, async (html) => {
          const outcome = await signUp(request.ip, request.params.slug, request.body.email);
          count(outcome);
          if (html) return sendPage(reply, 202, smallPage('Check your inbox', [SAME_ANSWER.message, 'You can close this page.']));
          return reply.code(202).send(SAME_ANSWER);
        });
      },
    });

    app.route({
      ...declared('confirmStatusSubscription'),
      config: { auth: AUTH.public },
      handler: async (request, reply) => {
        await pageOrJson(request, reply, async (html) => {
          await limitIp(request.ip);
          const page = await pageOf(request.params.slug);
          if (!(await statusSubscribersRepository.confirm(db, page.id, tokenHash(request.query.token), clock.now()))) throw linkGone();
          if (html)
            return sendPage(
              reply,
              200,
              smallPage('Subscribed', [
                `You will get mail about incidents and maintenance on the ${page.slug} status page.`,
                'Every mail has a link to unsubscribe.',
              ]),
            );
          return reply.send({ subscribed: true as const, page: statusPageUrl({ base: base(), slug: page.slug }) });
        });
      },
    });

    app.route({
      ...declared('statusUnsubscribePage'),
      config: { auth: AUTH.public },
      handler: async (request, reply) => {
        await pageOrJson(request, reply, async (html) => {
          await limitIp(request.ip);
          const page = await pageOf(request.params.slug);
          const sub = await statusSubscribersRepository.byUnsubscribeToken(db, page.id, request.query.token);
          if (!sub) throw linkGone();
          const email = maskedAddress(sub.email);
          const action = { action: `?token=${encodeURIComponent(request.query.token)}`, button: 'Unsubscribe' };
          if (html) return sendPage(reply, 200, smallPage('Unsubscribe', [`Stop mail to ${email} about the ${page.slug} status page?`], action));
          return reply.send({ subscribed: true as const, email, page: statusPageUrl({ base: base(), slug: page.slug }) });
        });
      },
    });

    app.route({
      ...declared('statusUnsubscribe'),
      config: { auth: AUTH.public },
      handler: async (request, reply) => {
        await pageOrJson(request, reply, async (html) => {
          await limitIp(request.ip);
          // An unknown page or token answers the same: a one-click client retries, and a link used twice is still done.
          const page = await statusSubscribersRepository.pageProject(db, request.params.slug.toLowerCase());
          if (page) await statusSubscribersRepository.unsubscribe(db, page.id, request.query.token);
          if (html) return sendPage(reply, 200, smallPage('Unsubscribed', ['No more mail goes to this address from this status page.']));
          return reply.send({ unsubscribed: true as const });
        });
      },
    });

    app.route({
      ...declared('listStatusSubscribers'),
      config: { auth: AUTH.project('uptime:read') },
      handler: async (request) => {
        const project = projectOf(request);
        const rows = await statusSubscribersRepository.list(db, project.id, S.perProject + S.webhooksPerProject);
        return { subscribers: rows.map(toSubscriber), counts: await statusSubscribersRepository.counts(db, project.id) };
      },
    });

    app.route({
      ...declared('createStatusWebhookSubscriber'),
      config: { auth: AUTH.project('uptime:write') },
      handler: async (request, reply) => {
        const project = projectOf(request);
        const url = await checkedUrl(platform, request.body.url, 'webhook', 'url');
        const now = clock.now();
        const made = await db.transaction(async (tx) => {
          if ((await statusSubscribersRepository.webhookCount(tx, project.id)) >= S.webhooksPerProject) return undefined;
          const { endpoint, secret } = await webhooksRepository.createEndpoint(
            tx,
            {
              projectId: project.id,
              url,
              format: 'standard',
              events: SUBSCRIBER_EVENT_PATTERNS,
              maxAttempts: LIMITS.webhook.maxAttempts.default,
              description: 'Status page subscriber',
            },
            now,
          );
          const id = newId('ssb_');
          await statusSubscribersRepository.addWebhook(tx, { id, projectId: project.id, endpointId: endpoint.id }, now);
          return { id, endpoint, secret };
        });
        if (!made) throw new ServiceError('conflict', `a status page has at most ${S.webhooksPerProject} webhook subscribers`);
        const iso = new Date(now).toISOString();
        return reply.code(201).send({
          subscriber: {
            id: made.id,
            kind: 'webhook' as const,
            email: null,
            url: made.endpoint.url,
            endpointId: made.endpoint.id,
            status: 'confirmed' as const,
            suppressed: false,
            createdAt: iso,
            confirmedAt: iso,
            secret: made.secret,
          },
        });
      },
    });

    app.route({
      ...declared('deleteStatusSubscriber'),
      config: { auth: AUTH.project('uptime:write') },
      handler: async (request, reply) => {
        const project = projectOf(request);
        if (!(await db.transaction((tx) => statusSubscribersRepository.remove(tx, project.id, request.params.subscriberId))))
          throw new ServiceError('not_found', 'no such subscriber');
        return reply.code(204).send(null);
      },
    });
  };
}
