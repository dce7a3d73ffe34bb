import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { once } from 'node:events';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { Parser, type ReadEntry } from 'tar';
import type { ArtifactLimits } from '../schemas/deploys.ts';
import { artifactBudget, DIR_BYTES, type ArtifactFailure, type OutputRoom } from './artifact-copy.ts';

/**
 * A prebuilt upload (`POST .../deploys/prebuilt`, a .tar.gz of a built directory) unpacked into `dest`, streamed and
 * never held whole, through the same checks a build's output gets (artifact-copy.ts), but stricter: a build's output
 * is the tenant's own tree that a link may point around in, an upload is only what the archive says, so anything but
 * a plain file or directory refuses the whole upload (no link is followed or dropped).
 *   1. gzip, counted twice: the compressed bytes against `maxUploadBytes`, the inflated ones against what the limits
 *      allow an archive of them to take (a gzip bomb is cut off there, however well it compresses)
 *   2. each entry's path: relative, no `..` segment, no NUL, at most MAX_PATH_CHARS; `./` prefixes and the root's own
 *      entry are fine (what `tar -C dist -czf site.tgz .` writes); `.git` is left out, as a build's copy does
 *   3. each entry's kind: files and directories only. Symbolic and hard links, devices, fifos refuse the upload
 *   4. limits: the artifact's (ARTIFACT_MAX_FILES, ARTIFACT_MAX_FILE_BYTES, ARTIFACT_MAX_BYTES) and the room the
 *      project, account and disk leave (output-quota.ts), checked from each entry's header before its bytes are read
 *   5. written under `dest` only (created with its parents, files `wx`: a name given twice refuses the upload)
 * The caller removes `dest` when the outcome is a refusal.
 */
export const MAX_PATH_CHARS = 1024;

export type UploadRefusal =
  | 'not_gzip'
  | 'not_tar'
  | 'link'
  | 'special_file'
  | 'absolute_path'
  | 'parent_path'
  | 'path_too_long'
  | 'duplicate_entry'
  | 'upload_too_large'
  | 'empty'
  | Exclude<ArtifactFailure, 'output_missing' | 'output_escapes'>;

export type UploadOutcome =
  | { ok: true; files: number; bytes: number; skipped: string[] }
  | { ok: false; reason: UploadRefusal; message: string; entry?: string };

export interface UnpackOptions {
  dest: string;
  limits: ArtifactLimits;
  /** Compressed bytes the upload may take. */
  maxUploadBytes: number;
  room?: OutputRoom;
}

/** Bytes of tar an archive of `limits` can take beyond its files' own: headers, long-name and pax records, padding. */
const perEntryOverhead = 3 * 512 + 2 * MAX_PATH_CHARS;
const FILE_TYPES = new Set(['File', 'OldFile', 'ContiguousFile']);

type Refused = Extract<UploadOutcome, { ok: false }>;
class Refusal extends Error {
  constructor(readonly refused: Refused) {
    super(refused.message);
  }
}
const refuse = (reason: UploadRefusal, message: string, entry?: string): never => {
  throw new Refusal({ ok: false, reason, message, entry });
};

/** A pass-through that calls `over` once more than `max` bytes went through it (and passes nothing more). */
function counted(max: number, over: () => void): Transform {
  let n = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      n += chunk.length;
      if (n > max) {
        over();
        return done();
      }
      done(null, chunk);
    },
  });
}

/** Where an entry goes inside the artifact (a path relative to it, `''` for the root), or why it cannot. */
export function entryPath(raw: string): string {
  const shown = raw.slice(0, 200);
  if (raw.length > MAX_PATH_CHARS) refuse('path_too_long', `an entry's path is longer than ${MAX_PATH_CHARS} characters`, shown);
  if (raw.includes('\0')) refuse('parent_path', 'an entry holds a NUL in its path', shown);
  if (raw.startsWith('/') || /^[A-Za-z]:[\\/]/.test(raw)) refuse('absolute_path', `${shown} is an absolute path`, shown);
  const segments = raw.split(/[\\/]/);
  if (segments.includes('..')) refuse('parent_path', `${shown} leads out of the directory (..)`, shown);
  return segments.filter((s) => s !== '' && s !== '.').join('/');
}

export async function unpackUpload(input: Readable, o: UnpackOptions): Promise<UploadOutcome> {
  const budget = artifactBudget(o.limits, o.room);
  const skipped: string[] = [];
  let files = 0;
  const root = path.resolve(o.dest);
  await mkdir(root, { recursive: true });

  async function take(entry: ReadEntry): Promise<void> {
    const rel = entryPath(entry.path);
    if (rel.split('/').includes('.git')) {
      skipped.push(rel);
      return void entry.resume();
    }
    const isDir = entry.type === 'Directory';
    if (!isDir && !FILE_TYPES.has(entry.type)) {
      const link = entry.type === 'SymbolicLink' || entry.type === 'Link';
      refuse(
        link ? 'link' : 'special_file',
        `${rel} is a ${link ? `${entry.type === 'Link' ? 'hard' : 'symbolic'} link` : entry.type}: a prebuilt upload holds files and directories only`,
        rel,
      );
    }
    if (rel === '') {
      if (!isDir) refuse('not_tar', 'the archive names a file for its root', rel);
      return void entry.resume();
    }
    const target = path.join(root, rel);
    // Checked once more on the joined path: nothing lands outside `dest`, whatever the parsing above missed.
    if (!target.startsWith(root + path.sep)) refuse('parent_path', `${rel} leads out of the directory`, rel);
    if (!isDir && entry.size > o.limits.maxFileBytes)
      refuse('file_too_large', `${rel} is ${entry.size} bytes, over ${o.limits.maxFileBytes} (ARTIFACT_MAX_FILE_BYTES)`, rel);
    const over = budget.charge(isDir ? DIR_BYTES : entry.size);
    if (over) refuse(over.reason as UploadRefusal, over.message, rel);
    try {
      if (isDir) {
        await mkdir(target, { recursive: true, mode: 0o755 });
        return void entry.resume();
      }
      await mkdir(path.dirname(target), { recursive: true, mode: 0o755 });
      files++;
      await new Promise<void>((resolve, reject) => {
        const out = createWriteStream(target, { flags: 'wx', mode: 0o644 });
        out.on('error', reject);
        out.on('finish', resolve);
        entry.pipe(out);
      });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EEXIST' || code === 'ENOTDIR' || code === 'EISDIR') refuse('duplicate_entry', `${rel} is in the archive twice (or under a file)`, rel);
      throw err;
    }
  }

  const maxInflated = o.limits.maxBytes + (o.limits.maxFiles + 4) * perEntryOverhead;
  const parser = new Parser({ strict: true, zstd: false, maxMetaEntrySize: 4 * MAX_PATH_CHARS });
  const stop = new AbortController();
  let failed: unknown;
  // The request itself is piped in, not made part of the pipeline: a refusal stops reading it, but does not destroy it
  // (its socket carries the answer that says why).
  const head = counted(o.maxUploadBytes, () =>
    fail(new Refusal({ ok: false, reason: 'upload_too_large', message: `the upload is over ${o.maxUploadBytes} bytes` })),
  );
  const fail = (err: unknown) => {
    failed ??= err;
    input.unpipe(head);
    stop.abort();
  };
  let chain: Promise<void> = Promise.resolve();
  parser.on('entry', (entry: ReadEntry) => {
    // The parser reads the next header once this entry's bytes are consumed: entries are taken one at a time.
    chain = chain
      .then(() => (failed ? void entry.resume() : take(entry)))
      .catch((err) => {
        entry.resume();
        fail(err);
      });
  });
  parser.on('ignoredEntry', (entry: ReadEntry) => fail(new Refusal({ ok: false, reason: 'not_tar', message: `a header of ${entry.path} is too large` })));
  parser.on('error', fail);
  const parsed = new Promise<void>((resolve) => {
    parser.on('end', resolve);
    stop.signal.addEventListener('abort', () => resolve());
  });
  let first = true;
  input.on('error', fail);
  input.pipe(head);
  await pipeline(
    head,
    createGunzip(),
    counted(maxInflated, () =>
      fail(
        new Refusal({
          ok: false,
          reason: 'artifact_too_large',
          message: `the upload inflates past what ARTIFACT_MAX_BYTES allows (${o.limits.maxBytes} bytes)`,
        }),
      ),
    ),
    async (source: AsyncIterable<Buffer>) => {
      for await (const chunk of source) {
        // An inflated stream that is itself compressed would be inflated again by the parser, uncounted: refused.
        if (first && chunk[0] === 0x1f && chunk[1] === 0x8b)
          return fail(new Refusal({ ok: false, reason: 'not_tar', message: 'the upload is compressed twice; send one .tar.gz' }));
        first = false;
        if (!parser.write(chunk)) await once(parser, 'drain', { signal: stop.signal });
      }
      parser.end();
    },
    { signal: stop.signal },
  ).catch(fail);
  await parsed;
  await chain;
  if (failed) {
    if (failed instanceof Refusal) return failed.refused;
    const code = String((failed as NodeJS.ErrnoException).code ?? '');
    if (code.startsWith('Z_')) return { ok: false, reason: 'not_gzip', message: 'the upload is not gzip (send a .tar.gz as application/gzip)' };
    if (code.startsWith('TAR_')) return { ok: false, reason: 'not_tar', message: `the upload is not a tar archive: ${(failed as Error).message}` };
    throw failed;
  }
  if (files === 0) return { ok: false, reason: 'empty', message: 'the upload holds no files' };
  return { ok: true, files, bytes: budget.bytes(), skipped };
}
