import type { MailMessage } from '../../platform/ports/mailer.ts';
import { routePath } from '../../schemas/api/client.ts';
import { PROJECT_EVENT_NAMES, type ProjectEventName } from '../../schemas/project-event-names.ts';

/**
 * What status page subscribers are sent (issue 43): the confirmation of a sign-up, and one mail per incident or
 * maintenance event, each with its own one-click unsubscribe (RFC 8058: `List-Unsubscribe` with an https address and
 * `List-Unsubscribe-Post: List-Unsubscribe=One-Click`). Text only: tenant-written titles and messages are never HTML.
 * Links are built from PUBLIC_BASE_URL.
 */

/** The project events status subscribers hear about (the contract's names; cancelled maintenance too). */
export const SUBSCRIBER_EVENTS = PROJECT_EVENT_NAMES.filter((n) => n.startsWith('uptime.incident.') || n.startsWith('uptime.maintenance.'));
export type SubscriberEvent = Extract<ProjectEventName, `uptime.incident.${string}` | `uptime.maintenance.${string}`>;
export const isSubscriberEvent = (name: string): name is SubscriberEvent => (SUBSCRIBER_EVENTS as readonly string[]).includes(name);

/** The webhook subscription of a webhook subscriber: the same events, as families. */
export const SUBSCRIBER_EVENT_PATTERNS = ['uptime.incident.*', 'uptime.maintenance.*'];

/**
 * An address fit to mail, lower-cased, or undefined. Deliberately plain: one `@`, a dotted domain, no spaces, no
 * control characters and nothing that ends a header or starts another address (`,;<>"()[]\`).
 */
export function mailableAddress(raw: string, maxChars: number): string | undefined {
  const email = raw.trim().toLowerCase();
  if (!email || email.length > maxChars) return undefined;
  if (!/^[a-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/.test(email)) return undefined;
  if (email.startsWith('.') || email.includes('..') || email.split('@')[0]!.endsWith('.')) return undefined;
  return email;
}

/** `j***@example.com`: enough for its owner to recognise, not the whole address, on a page anyone holding the link sees. */
export function maskedAddress(email: string): string {
  const [local = '', domain = ''] = email.split('@');
  return `${local.slice(0, 1)}***@${domain}`;
}

export interface PageLinks {
  base: string;
  slug: string;
}
/** The status page people read (GET /status/:slug). */
export const statusPageUrl = ({ base, slug }: PageLinks) => `${base}/status/${encodeURIComponent(slug)}`;
export const confirmUrl = (p: PageLinks, token: string) => p.base + routePath('confirmStatusSubscription', { slug: p.slug }, { token });
export const unsubscribeUrl = (p: PageLinks, token: string) => p.base + routePath('statusUnsubscribe', { slug: p.slug }, { token });

/** The confirmation mail of a sign-up: the link, how long it lasts, and what to do when it was not you. */
export function confirmationMail(to: string, p: PageLinks, token: string, hours: number): MailMessage {
  return {
    to: [to],
    subject: `Confirm your subscription to ${p.slug} status`,
    text: [
      `Someone (hopefully you) asked for mail about incidents and maintenance on the ${p.slug} status page:`,
      statusPageUrl(p),
      '',
      `Confirm within ${hours} hours by opening this link:`,
      confirmUrl(p, token),
      '',
      'If it was not you, ignore this mail: nothing more is sent unless the link is opened.',
    ].join('\n'),
  };
}

/** An incident or maintenance item as the events carry it (the status JSON's item; every field may be missing). */
interface EventItem {
  title?: unknown;
  status?: unknown;
  impact?: unknown;
  message?: unknown;
  startsAt?: unknown;
  endsAt?: unknown;
  updates?: unknown;
}

const str = (v: unknown, max = 5000) => (typeof v === 'string' ? v.slice(0, max) : '');

const SUBJECTS: Record<SubscriberEvent, string> = {
  'uptime.incident.created': 'Incident',
  'uptime.incident.updated': 'Update',
  'uptime.incident.resolved': 'Resolved',
  'uptime.maintenance.scheduled': 'Maintenance scheduled',
  'uptime.maintenance.started': 'Maintenance started',
  'uptime.maintenance.completed': 'Maintenance completed',
  'uptime.maintenance.cancelled': 'Maintenance cancelled',
};

/** The mail of one event to one subscriber, with that subscriber's own unsubscribe address. */
export function notificationMail(to: string, p: PageLinks, event: SubscriberEvent, data: Record<string, unknown>, unsubscribeToken: string): MailMessage {
  const incident = event.startsWith('uptime.incident.');
  const item = ((incident ? data.incident : data.maintenance) ?? {}) as EventItem;
  const update = (data.update ?? {}) as { status?: unknown; message?: unknown; at?: unknown };
  const title = str(item.title, 200).replace(/[\r\n]+/g, ' ') || (incident ? 'Incident' : 'Maintenance');
  const lines: string[] = [];
  if (incident) {
    const status = str(update.status, 40) || str(item.status, 40);
    if (status) lines.push(`Status: ${status}`);
    if (str(item.impact, 40)) lines.push(`Impact: ${str(item.impact, 40)}`);
    const message = str(update.message) || latestUpdateMessage(item.updates);
    if (message) lines.push('', message);
  } else {
    if (str(item.startsAt, 40)) lines.push(`From: ${str(item.startsAt, 40)}`);
    if (str(item.endsAt, 40)) lines.push(`Until: ${str(item.endsAt, 40)}`);
    if (str(item.message)) lines.push('', str(item.message));
  }
  const unsubscribe = unsubscribeUrl(p, unsubscribeToken);
  return {
    to: [to],
    subject: `[${p.slug} status] ${SUBJECTS[event]}: ${title}`,
    text: [title, '', ...lines, '', `The status page: ${statusPageUrl(p)}`, '', `Unsubscribe (one click, no questions): ${unsubscribe}`].join('\n'),
    headers: { 'List-Unsubscribe': `<${unsubscribe}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
  };
}

function latestUpdateMessage(updates: unknown): string {
  if (!Array.isArray(updates) || !updates.length) return '';
  const last = updates[updates.length - 1] as { message?: unknown };
  return str(last?.message);
}
