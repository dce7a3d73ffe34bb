import UAParser from 'ua-parser-js';
import type { ContextTable, EventContext } from '../../../schemas/error-context.ts';
import type { IncomingEvent } from './outcome.ts';

/**
 * A browser event's contexts from its User-Agent where the SDK sent none (issue 40): `browser` (name, version), `os`
 * (name, version) and `device` (family, model, brand), as Sentry's contexts name them, each filled only when the event
 * has no context of that name. The User-Agent is the event's own request header, else the header of the request that
 * brought the batch (the edge stamps it) for an event of the browser runtime: a server's request says nothing of the
 * browser its error came from. Parsed by ua-parser-js (v1, MIT), each distinct User-Agent once while it is remembered.
 */
const PARSED_MAX = 2_000;
const parsed = new Map<string, Record<string, ContextTable>>();

export function contextsOfUserAgent(ua: string): Record<string, ContextTable> {
  let out = parsed.get(ua);
  if (out) return out;
  const r = new UAParser(ua).getResult();
  out = {};
  if (r.browser.name) out.browser = r.browser.version ? { name: r.browser.name, version: r.browser.version } : { name: r.browser.name };
  if (r.os.name) out.os = r.os.version ? { name: r.os.name, version: r.os.version } : { name: r.os.name };
  if (r.device.type || r.device.model || r.device.vendor) {
    const device: ContextTable = { family: r.device.type ?? r.device.model ?? r.device.vendor ?? '' };
    if (r.device.model) device.model = r.device.model;
    if (r.device.vendor) device.brand = r.device.vendor;
    out.device = device;
  } else if (r.browser.name && r.os.name) out.device = { family: 'desktop' };
  if (parsed.size >= PARSED_MAX) parsed.clear();
  parsed.set(ua, out);
  return out;
}

export function createContextStep() {
  /** `batchUserAgent`: the User-Agent the edge stamped on the event's batch. */
  return function contextStep(e: IncomingEvent, batchUserAgent: string | undefined): IncomingEvent {
    const ev = e.event;
    const ua = ev.context?.request?.headers?.['user-agent'] ?? (ev.runtime === 'browser' ? batchUserAgent : undefined);
    if (!ua) return e;
    const derived = contextsOfUserAgent(ua);
    const have = ev.context?.contexts;
    let contexts: EventContext['contexts'];
    for (const name in derived) {
      if (have?.[name]) continue;
      contexts ??= { ...have };
      contexts[name] = derived[name]!;
    }
    if (!contexts) return e;
    return { ...e, event: { ...ev, context: { ...ev.context, contexts } } };
  };
}
