import { isUtf8 } from 'node:buffer';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import { parseBoundedJson } from '../../platform/bounded-json.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { refusal, type Refusal } from '../refusals.ts';

/**
 * A PostHog SDK's request body, opened (pure). The SDKs send the same JSON in several wrappings, and put the project's
 * key inside it, so the body is opened before the request can be admitted:
 *   1. compression: `Content-Encoding: gzip|deflate|br` (posthog-node), or a gzip body posted as text/plain
 *      (posthog-js's `gzip-js`, told by `?compression=gzip-js` or only by the gzip magic bytes); inflated at most to
 *      LIMITS.posthog.maxDecompressedBytes
 *   2. the form `data=<base64 or JSON>` (posthog-js's `compression=base64`, and sendBeacon on page unload)
 *   3. JSON, depth-bounded
 *   4. the key: `api_key` or `token` of the body, else of its first event (`properties.token`), else `?token=` /
 *      `?api_key=` of the query
 */
const P = LIMITS.posthog;

export interface OpenedBody {
  json: unknown;
  /** The project's key as the body names it ('' when it names none). */
  token: string;
  /** The client's send time (`sent_at`), for clock-skew correction; NaN when absent. */
  sentAt: number;
}

/** A JSON object (not an array, not null). */
export const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The events of an opened body: an array, `{ batch: [...] }`, or one event. */
export function eventsOf(json: unknown): unknown[] {
  if (Array.isArray(json)) return json;
  if (isObject(json) && Array.isArray(json.batch)) return json.batch;
  return [json];
}

function queryParams(query: string): URLSearchParams {
  try {
    return new URLSearchParams(query);
  } catch {
    return new URLSearchParams();
  }
}

function inflate(body: Buffer, encoding: string, compression: string): Buffer | Refusal {
  const enc = encoding.trim().toLowerCase();
  const opts = { maxOutputLength: P.maxDecompressedBytes };
  const gzipMagic = body.length >= 2 && body[0] === 0x1f && body[1] === 0x8b;
  try {
    if (enc === 'gzip' || enc === 'x-gzip' || (enc === '' && (compression === 'gzip-js' || compression === 'gzip' || gzipMagic))) return gunzipSync(body, opts);
    if (enc === 'deflate') return inflateSync(body, opts);
    if (enc === 'br') return brotliDecompressSync(body, opts);
    if (enc !== '' && enc !== 'identity') return refusal('unsupported_encoding', `Content-Encoding ${enc} is not supported (gzip, deflate, br or none)`);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE')
      return refusal('too_large_decompressed', `the body decompresses past ${P.maxDecompressedBytes} bytes`);
    return refusal('invalid_request', 'the body is not valid gzip, deflate or br');
  }
  if (compression === 'lz64') return refusal('unsupported_encoding', 'compression=lz64 is not supported (gzip-js, base64 or none)');
  return body;
}

/** `data=` of a form body: base64 of JSON (posthog-js) or JSON itself. */
function formData(text: string): string | Refusal {
  const data = queryParams(text).get('data');
  if (data === null) return refusal('invalid_request', 'the form body has no data field');
  const trimmed = data.trimStart();
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) return data;
  const decoded = Buffer.from(data, 'base64');
  if (!isUtf8(decoded)) return refusal('invalid_request', 'the data field is not base64 of UTF-8 JSON');
  return decoded.toString('utf8');
}

const text = (v: unknown): string => (typeof v === 'string' ? v.trim() : '');

/** The key a PostHog body names: its own `api_key`/`token`, else its first event's. */
export function tokenOf(json: unknown): string {
  const first = eventsOf(json)[0];
  const body = isObject(json) ? json : {};
  const event = isObject(first) ? first : {};
  const props = isObject(event.properties) ? event.properties : {};
  return text(body.api_key) || text(body.token) || text(event.api_key) || text(event.token) || text(props.token);
}

export function openPostHogBody(body: Buffer, h: { contentType: string; contentEncoding: string; query: string }): OpenedBody | Refusal {
  const q = queryParams(h.query);
  const compression = (q.get('compression') ?? '').toLowerCase();
  const raw = inflate(body, h.contentEncoding, compression);
  if (!Buffer.isBuffer(raw)) return raw;
  if (!isUtf8(raw)) return refusal('invalid_request', 'the body is not valid UTF-8');
  let textBody = raw.toString('utf8');
  const form = h.contentType.toLowerCase().includes('application/x-www-form-urlencoded') || textBody.startsWith('data=');
  if (form) {
    const data = formData(textBody);
    if (typeof data !== 'string') return data;
    textBody = data;
  }
  const parsed = parseBoundedJson(textBody);
  if (!parsed.ok) return refusal('invalid_request', parsed.reason === 'too_deep' ? `the body is ${parsed.message}` : 'the body is not valid JSON');
  const json = parsed.value;
  const token = tokenOf(json) || text(q.get('token')) || text(q.get('api_key'));
  const sentAtText = isObject(json) && typeof json.sent_at === 'string' ? json.sent_at : '';
  return { json, token, sentAt: sentAtText ? Date.parse(sentAtText) : Number.NaN };
}
