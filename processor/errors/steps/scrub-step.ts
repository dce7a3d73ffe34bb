import type { Breadcrumb, EventContext } from '../../../schemas/error-context.ts';
import { copyTextFields, ERROR_EVENT_TEXT_FIELDS, ERROR_EVENT_TEXT_FIELD_NAMES, type StampedErrorEvent } from '../../../schemas/error-event.ts';
import { scrubText, scrubValue } from '../../../domain/secret-scrub.ts';
import { ok, type IncomingEvent, type StepOutcome } from './outcome.ts';

/** The text fields the scrubber reads (schemas/error-event.ts says which), besides name, message, stack and extra. */
const SCRUBBED = ERROR_EVENT_TEXT_FIELD_NAMES.filter((f) => ERROR_EVENT_TEXT_FIELDS[f].scrubbed);

/** Scrub secrets out of every free-text field before any later step (or store) sees the event. */
export function createScrubStep() {
  return function scrubStep(input: IncomingEvent): StepOutcome<IncomingEvent> {
    const e = input.event;
    // Every key set in one fixed order, not spread: one object shape for every event (a spread is several
    // times slower here).
    const event = { eventId: e.eventId, name: scrubText(e.name), message: scrubText(e.message), stack: scrubText(e.stack) } as StampedErrorEvent;
    copyTextFields(e, event as unknown as Record<string, unknown>);
    for (const f of SCRUBBED) {
      const v = event[f];
      if (v !== undefined) event[f] = scrubText(v);
    }
    event.extra = e.extra === undefined ? undefined : (scrubValue(e.extra) as Record<string, unknown>);
    event.clientTime = e.clientTime;
    event.runtime = e.runtime;
    event.truncated = e.truncated;
    // Ids, not text: the symbolication step reads them (issue 37).
    if (e.debugIds !== undefined) event.debugIds = e.debugIds;
    if (e.context !== undefined) event.context = scrubContext(e.context);
    return ok({ projectId: input.projectId, originHost: input.originHost, receivedAt: input.receivedAt, event });
  };
}

/**
 * The context (issue 40) by the same rules: every text scrubbed, maps (tags, contexts, breadcrumb data) by scrubValue
 * (secret-named keys' values filtered whole, key names scrubbed too), the request's URL and allowed headers as text.
 * The user's e-mail and IP address are kept as the SDK sent them, as far as those rules allow: the rules filter
 * secrets, not who a user is, and a Sentry SDK sends either only when its app says so (`setUser`, `sendDefaultPii`);
 * `{{auto}}` was never filled (schemas/error-context.ts).
 */
export function scrubContext(c: EventContext): EventContext {
  const out: EventContext = {};
  if (c.breadcrumbs) out.breadcrumbs = c.breadcrumbs.map(scrubBreadcrumb);
  if (c.level) out.level = c.level;
  if (c.tags) out.tags = scrubValue(c.tags) as Record<string, string>;
  if (c.contexts) out.contexts = scrubValue(c.contexts) as EventContext['contexts'];
  if (c.request) {
    const r: NonNullable<EventContext['request']> = {};
    if (c.request.url) r.url = scrubText(c.request.url);
    if (c.request.method) r.method = c.request.method;
    if (c.request.headers) r.headers = scrubValue(c.request.headers) as Record<string, string>;
    out.request = r;
  }
  if (c.user) {
    const u: NonNullable<EventContext['user']> = {};
    if (c.user.id) u.id = scrubText(c.user.id);
    if (c.user.email) u.email = scrubText(c.user.email);
    if (c.user.ipAddress) u.ipAddress = c.user.ipAddress;
    if (c.user.username) u.username = scrubText(c.user.username);
    out.user = u;
  }
  if (c.release) out.release = scrubText(c.release);
  if (c.dist) out.dist = scrubText(c.dist);
  if (c.serverName) out.serverName = scrubText(c.serverName);
  if (c.sdk) out.sdk = c.sdk;
  if (c.clientEnvironment) out.clientEnvironment = scrubText(c.clientEnvironment);
  return out;
}

function scrubBreadcrumb(b: Breadcrumb): Breadcrumb {
  const out: Breadcrumb = { timestamp: b.timestamp };
  if (b.type) out.type = b.type;
  if (b.category) out.category = scrubText(b.category);
  if (b.level) out.level = b.level;
  if (b.message) out.message = scrubText(b.message);
  if (b.data) out.data = scrubValue(b.data) as Breadcrumb['data'];
  return out;
}
