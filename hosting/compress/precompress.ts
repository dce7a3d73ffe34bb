import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import zlib from 'node:zlib';

/**
 * Text files compressed once, at the end of the build, and kept beside the file (`app.js.br`, `app.js.gz`), so the
 * server picks one by Accept-Encoding without compressing per request. Only COMPRESSIBLE types between
 * COMPRESS_MIN_BYTES and COMPRESS_MAX_FILE_BYTES; a sibling is kept only when it saves at least a tenth, and never
 * over a file of the same name the build wrote. Bounded per deploy by COMPRESS_BUDGET (input bytes and time) and by
 * the room the deploy's output quota leaves (`room`, the bytes the copies may take: builder/output-quota.ts): past
 * either, the rest is served uncompressed and the build log says so.
 */
export const COMPRESSIBLE = /\.(?:html?|css|js|mjs|cjs|json|map|svg|txt|xml|md|csv|wasm|webmanifest|ico|ttf|otf)$/i;
export const COMPRESS_MIN_BYTES = 1024;
export const COMPRESS_MAX_FILE_BYTES = 8 * 1024 * 1024;
export const COMPRESS_BUDGET = { bytes: 128 * 1024 * 1024, ms: 60_000 };
/** Brotli's best quality up to this size, a faster one above (quality 11 costs seconds on a megabyte). */
const BROTLI_BEST_UP_TO = 512 * 1024;

const brotli = promisify(zlib.brotliCompress);
const gzip = promisify(zlib.gzip);

export type Encoding = 'br' | 'gzip';
export const SIBLING: Record<Encoding, string> = { br: '.br', gzip: '.gz' };

export interface CompressBudget {
  bytes: number;
  deadline: number;
  /** Set once a file was skipped for want of budget. */
  spent?: boolean;
  /** What the copies written may still take (the output quota's room); unbounded when absent. */
  room?: number;
  /** Set once a copy was not kept for want of room. */
  roomOut?: boolean;
  /** The bytes of the copies written so far. */
  written: number;
}

/** At most what the copies of an output of `bytes` can take: two, each under 0.9 of at most COMPRESS_BUDGET.bytes. */
export const compressedBound = (bytes: number) => Math.ceil(2 * 0.9 * Math.min(bytes, COMPRESS_BUDGET.bytes));

/**
 * The encodings written beside one file, given its bytes. `exists(rel)`: a file of the output already has that name
 * (never overwritten).
 */
export async function precompress(dir: string, rel: string, body: Buffer, budget: CompressBudget, exists: (rel: string) => boolean): Promise<Encoding[]> {
  if (!COMPRESSIBLE.test(rel) || body.length < COMPRESS_MIN_BYTES || body.length > COMPRESS_MAX_FILE_BYTES) return [];
  if (body.length > budget.bytes || Date.now() > budget.deadline) {
    budget.spent = true;
    return [];
  }
  if (budget.room !== undefined && budget.room <= 0) {
    budget.roomOut = true;
    return [];
  }
  budget.bytes -= body.length;
  const made: Encoding[] = [];
  const quality = body.length <= BROTLI_BEST_UP_TO ? zlib.constants.BROTLI_MAX_QUALITY : 6;
  const variants: Array<[Encoding, () => Promise<Buffer>]> = [
    ['br', () => brotli(body, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: quality, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: body.length } })],
    ['gzip', () => gzip(body, { level: 9 })],
  ];
  for (const [encoding, compress] of variants) {
    const sibling = rel + SIBLING[encoding];
    if (exists(sibling)) continue;
    const out = await compress();
    if (out.length > body.length * 0.9) continue;
    if (budget.room !== undefined && out.length > budget.room) {
      budget.roomOut = true;
      continue;
    }
    await writeFile(path.join(dir, sibling), out, { flag: 'wx', mode: 0o644 });
    budget.written += out.length;
    if (budget.room !== undefined) budget.room -= out.length;
    made.push(encoding);
  }
  return made;
}

/** A file's bytes (the caller knows it is a regular file of the artifact). */
export const readArtifactFile = (dir: string, rel: string) => readFile(path.join(dir, rel));
