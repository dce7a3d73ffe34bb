import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { Busboy, type BusboyInstance } from '@fastify/busboy';
import { LIMITS } from '../../schemas/limits.ts';
import type { Chunk } from './uploads-repository.ts';

/**
 * The body of sentry-cli's chunk upload, read (the whole body is already in memory, at most chunkRequestBytes): a
 * `multipart/form-data` body whose every part is one chunk, `name="file"` (raw) or `name="file_gzip"` (gzip, when the
 * options offer it), `filename` = the SHA-1 of the chunk's uncompressed bytes. Each chunk is at most chunkBytes once
 * inflated (a gzip bomb stops there) and must hash to its name; anything else refuses the whole request.
 */
export const MAX_CHUNKS_PER_REQUEST = 8;

export type ParsedChunks = { ok: true; chunks: Chunk[] } | { ok: false; code: 'invalid_request' | 'payload_too_large'; message: string };

const SHA1 = /^[0-9a-f]{40}$/;

export function parseChunkUpload(contentType: string, body: Buffer): Promise<ParsedChunks> {
  return new Promise((resolve) => {
    let done = false;
    const finish = (r: ParsedChunks) => {
      if (done) return;
      done = true;
      resolve(r);
    };
    const refuse = (code: 'invalid_request' | 'payload_too_large', message: string) => finish({ ok: false, code, message });

    let bb: BusboyInstance;
    try {
      bb = new Busboy({
        headers: { 'content-type': contentType },
        isPartAFile: () => true,
        limits: {
          files: MAX_CHUNKS_PER_REQUEST,
          parts: MAX_CHUNKS_PER_REQUEST,
          fields: 0,
          fileSize: LIMITS.sourceMaps.chunkRequestBytes,
          headerPairs: 16,
        },
      });
    } catch (err) {
      return refuse('invalid_request', `not a multipart/form-data body: ${(err as Error).message}`);
    }

    const parts: Array<Promise<Chunk | undefined>> = [];
    bb.on('file', (field, stream, filename) => {
      const bytes: Buffer[] = [];
      parts.push(
        new Promise((partDone) => {
          stream.on('data', (b: Buffer) => bytes.push(b));
          stream.on('error', () => partDone(undefined));
          stream.on('end', () => {
            if (stream.truncated) {
              refuse('payload_too_large', `a part is larger than ${LIMITS.sourceMaps.chunkRequestBytes} bytes`);
              return partDone(undefined);
            }
            const chunk = chunkOf(field, filename, Buffer.concat(bytes));
            if ('code' in chunk) {
              refuse(chunk.code, chunk.message);
              return partDone(undefined);
            }
            partDone(chunk);
          });
        }),
      );
    });
    const tooMany = () => refuse('payload_too_large', `more than ${MAX_CHUNKS_PER_REQUEST} chunks in one request`);
    bb.on('filesLimit', tooMany);
    bb.on('partsLimit', tooMany);
    bb.on('fieldsLimit', () => refuse('invalid_request', 'only chunk parts (file, file_gzip) are taken'));
    bb.on('error', (err) => refuse('invalid_request', `malformed multipart body: ${String((err as Error)?.message ?? err).slice(0, 200)}`));
    bb.on('finish', () => {
      void Promise.all(parts).then((chunks) => {
        const got = chunks.filter((c): c is Chunk => c !== undefined);
        if (!got.length) return refuse('invalid_request', 'no chunk in the body (parts named file or file_gzip, filename = SHA-1)');
        finish({ ok: true, chunks: got });
      });
    });
    bb.end(body);
  });
}

function chunkOf(field: string, filename: string | undefined, raw: Buffer): Chunk | { code: 'invalid_request' | 'payload_too_large'; message: string } {
  const max = LIMITS.sourceMaps.chunkBytes;
  if (field !== 'file' && field !== 'file_gzip') return { code: 'invalid_request', message: `unexpected part ${JSON.stringify(field.slice(0, 40))}` };
  const checksum = (filename ?? '').toLowerCase();
  if (!SHA1.test(checksum)) return { code: 'invalid_request', message: 'each chunk part needs filename = the SHA-1 of its bytes (40 hex)' };
  let content = raw;
  if (field === 'file_gzip') {
    try {
      content = gunzipSync(raw, { maxOutputLength: max });
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === 'ERR_BUFFER_TOO_LARGE') return { code: 'payload_too_large', message: `chunk ${checksum} inflates past ${max} bytes` };
      return { code: 'invalid_request', message: `chunk ${checksum} is not valid gzip` };
    }
  }
  if (content.length > max) return { code: 'payload_too_large', message: `chunk ${checksum} is ${content.length} bytes, more than ${max}` };
  const actual = createHash('sha1').update(content).digest('hex');
  if (actual !== checksum) return { code: 'invalid_request', message: `chunk ${checksum}: its bytes hash to ${actual}` };
  return { checksum, content };
}
