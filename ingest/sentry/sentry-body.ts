import { promisify } from 'node:util';
import { brotliDecompress, brotliDecompressSync, gunzip, gunzipSync, inflate, inflateSync, type ZlibOptions } from 'node:zlib';
import { LIMITS } from '../../schemas/limits.ts';
import { edgeBusy } from '../http/body-budget.ts';
import { refusal, type Refusal } from '../refusals.ts';

/**
 * A Sentry SDK's body as sent (`Content-Encoding` gzip, deflate, br or none) as its bytes, within `max` bytes once
 * inflated. A body that inflates to at most LIMITS.sentryIngest.syncInflateBytes (nearly every SDK request) is
 * inflated inline, which is faster; a larger one on libuv's threads, so a 20 MB envelope (or a bomb) does not hold
 * the event loop.
 */
const S = LIMITS.sentryIngest;
type Codec = { sync: (b: Buffer, o: ZlibOptions) => Buffer; async: (b: Buffer, o: ZlibOptions) => Promise<Buffer> };
const CODECS: Record<string, Codec> = {
  gzip: { sync: gunzipSync, async: promisify(gunzip) as Codec['async'] },
  deflate: { sync: inflateSync, async: promisify(inflate) as Codec['async'] },
  br: { sync: brotliDecompressSync, async: promisify(brotliDecompress) as Codec['async'] },
};
CODECS['x-gzip'] = CODECS.gzip!;

function codecOf(encoding: string): Codec | 'identity' | Refusal {
  const enc = encoding.trim().toLowerCase();
  if (enc === '' || enc === 'identity') return 'identity';
  return CODECS[enc] ?? refusal('unsupported_encoding', `Content-Encoding ${enc} is not supported (gzip, deflate, br or none)`);
}

const tooLarge = (err: unknown) => (err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError;

function failed(err: unknown, encoding: string, max: number): Refusal {
  if (tooLarge(err)) return refusal('too_large_decompressed', `the body decompresses past ${max} bytes`);
  return refusal('invalid_request', `the body is not valid ${encoding.trim().toLowerCase()}`);
}

/** Inline, for bodies already held to a small limit (the store route's one event). */
export function decompressSync(body: Buffer, encoding: string, max: number): Buffer | Refusal {
  const codec = codecOf(encoding);
  if (codec === 'identity' || 'reason' in codec) return codec === 'identity' ? body : codec;
  try {
    return codec.sync(body, { maxOutputLength: max });
  } catch (err) {
    return failed(err, encoding, max);
  }
}

/**
 * `reserve`: the edge's large-body budget (ingest/http/body-budget.ts), asked for `max` bytes before an inflation off
 * the loop (one inline is held to syncInflateBytes); when they do not fit, the body is refused `edge_busy`.
 */
export async function decompress(body: Buffer, encoding: string, max: number, reserve?: (bytes: number) => boolean): Promise<Buffer | Refusal> {
  const codec = codecOf(encoding);
  if (codec === 'identity' || 'reason' in codec) return codec === 'identity' ? body : codec;
  const inline = Math.min(max, S.syncInflateBytes);
  if (body.length < inline) {
    try {
      return codec.sync(body, { maxOutputLength: inline });
    } catch (err) {
      // Larger once inflated than is done inline: again, off the loop.
      if (inline === max || !tooLarge(err)) return failed(err, encoding, max);
    }
  }
  if (reserve && !reserve(max)) return edgeBusy();
  try {
    return await codec.async(body, { maxOutputLength: max });
  } catch (err) {
    return failed(err, encoding, max);
  }
}
