import { parseBoundedJson } from '../../platform/bounded-json.ts';
/**
 * Sentry's envelope format (https://develop.sentry.dev/sdk/data-model/envelopes/): a JSON header line, then items,
 * each a JSON header line (`type`, optional `length`) and a payload: `length` bytes when given, else up to the next
 * newline. Pure and total: any input gives items or a reason, never a throw.
 */
export interface EnvelopeItem {
  type: string;
  payload: Buffer;
}

export type EnvelopeOutcome = { ok: true; header: Record<string, unknown>; items: EnvelopeItem[] } | { ok: false; message: string };

const NL = 0x0a;
/** More items than any SDK sends in one envelope (an event with attachments, sessions, a client report). */
const MAX_ITEMS = 100;

function jsonObject(bytes: Buffer): Record<string, unknown> | undefined {
  const parsed = parseBoundedJson(bytes.toString('utf8'));
  const v = parsed.ok ? parsed.value : undefined;
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

export function parseEnvelope(body: Buffer): EnvelopeOutcome {
  let pos = 0;
  const line = (): Buffer => {
    let end = body.indexOf(NL, pos);
    if (end === -1) end = body.length;
    const out = body.subarray(pos, end);
    pos = end + 1;
    return out;
  };
  const header = jsonObject(line());
  if (!header) return { ok: false, message: 'the envelope header is not a JSON object' };
  const items: EnvelopeItem[] = [];
  while (pos < body.length) {
    const headerLine = line();
    if (headerLine.length === 0 || (headerLine.length === 1 && headerLine[0] === 0x0d)) continue;
    const h = jsonObject(headerLine);
    if (!h || typeof h.type !== 'string') return { ok: false, message: `envelope item ${items.length + 1} has no JSON header with a type` };
    let payload: Buffer;
    if (h.length !== undefined) {
      if (typeof h.length !== 'number' || !Number.isInteger(h.length) || h.length < 0 || pos + h.length > body.length) {
        return { ok: false, message: `envelope item ${items.length + 1} declares a length the envelope does not hold` };
      }
      payload = body.subarray(pos, pos + h.length);
      pos += h.length;
      if (body[pos] === NL) pos++;
    } else payload = line();
    items.push({ type: h.type, payload });
    if (items.length > MAX_ITEMS) return { ok: false, message: `an envelope holds at most ${MAX_ITEMS} items` };
  }
  return { ok: true, header, items };
}
