import { createHash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import { sourceMapsRepository } from '../../domain/source-maps/source-maps-repository.ts';
import { MAX_ASSEMBLE_CHUNKS } from '../../schemas/api/source-maps.ts';
import { routePath } from '../../schemas/api/client.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { LIMITS } from '../../schemas/limits.ts';
import type { RouteAuth } from '../auth/route-auth.ts';
import { readArtifactBundle, type BundleRefusal } from './artifact-bundle.ts';
import { MAX_CHUNKS_PER_REQUEST, parseChunkUpload } from './chunk-upload.ts';
import { uploadsRepository, type UploadProject } from './uploads-repository.ts';
import { declared } from '../declared-route.ts';

/**
 * Source maps from builds made elsewhere (issue 37): sentry-cli's upload, unchanged (shapes in
 * schemas/api/source-maps.ts). `sentry-cli sourcemaps upload` makes four calls, all answered here:
 *  1. GET chunk-upload/: the options (chunks of chunkBytes, one a request, gzip, sha1);
 *  2. POST artifactbundle/assemble/: the chunks the caller has not sent yet (`not_found` + missingChunks);
 *  3. POST chunk-upload/: those chunks, each checked against its SHA-1 and held for the caller (uploads-repository.ts);
 *  4. POST artifactbundle/assemble/ again: the chunks joined and checked against the bundle's SHA-1, the bundle read
 *     (artifact-bundle.ts), its maps stored for every project named (`ok`, with the refused maps in `detail`), the
 *     chunks deleted. Assembling is synchronous and idempotent: a bundle a project already holds answers `ok` at once.
 * Who: a `cx_live_` key with `sourcemaps:write` (its own project only) or a `cx_cli_` token (the user's projects).
 * `:org` is any value. A project the credential may not write, or that does not exist, is one 403 (no slug leaks; a 404
 * would read "release not found" in sentry-cli). A refused bundle is a 4xx in the spec's error shape.
 */
const UPLOAD_AUTH: RouteAuth = { cli: true, keyScope: 'sourcemaps:write' };

const REFUSAL_STATUS: Record<BundleRefusal, 'invalid_request' | 'payload_too_large'> = {
  bundle_unreadable: 'invalid_request',
  manifest_invalid: 'invalid_request',
  path_outside: 'invalid_request',
  bundle_too_many_files: 'payload_too_large',
  bundle_too_large: 'payload_too_large',
};

export function sourceMapRoutes(platform: Pick<Platform, 'db' | 'clock' | 'logger'>): FastifyPluginAsyncZod {
  const { db, clock } = platform;
  const log = platform.logger.child({ component: 'source-map-uploads' });
  const S = LIMITS.sourceMaps;

  return async (app) => {
    // Chunks arrive as multipart bodies, read whole (bounded) and parsed by chunk-upload.ts.
    app.addContentTypeParser('multipart/form-data', { parseAs: 'buffer', bodyLimit: S.chunkRequestBytes }, (_request, body, done) => done(null, body));

    app.route({
      ...declared('chunkUploadOptions'),
      config: { auth: UPLOAD_AUTH },
      handler: async (request) => ({
        url: routePath('uploadChunks', { org: request.params.org }),
        chunkSize: S.chunkBytes,
        chunksPerRequest: MAX_CHUNKS_PER_REQUEST,
        maxRequestSize: S.chunkBytes,
        maxFileSize: S.uploadBytes,
        maxWait: 60,
        concurrency: 2,
        hashAlgorithm: 'sha1' as const,
        compression: ['gzip'],
        accept: ['release_files', 'artifact_bundles', 'artifact_bundles_v2'],
      }),
    });

    app.route({
      ...declared('uploadChunks'),
      config: { auth: UPLOAD_AUTH },
      bodyLimit: S.chunkRequestBytes,
      handler: async (request) => {
        const contentType = String(request.headers['content-type'] ?? '');
        if (!Buffer.isBuffer(request.body) || !/^multipart\/form-data/i.test(contentType))
          throw new ServiceError('unsupported_media_type', 'send chunks as multipart/form-data');
        const parsed = await parseChunkUpload(contentType, request.body);
        if (!parsed.ok) throw new ServiceError(parsed.code, parsed.message);
        const owner = ownerOf(request);
        const now = clock.now();
        await uploadsRepository.sweepChunks(db, now - S.chunkTtlMs);
        await uploadsRepository.putChunks(db, owner, parsed.chunks, now);
        await uploadsRepository.trimChunks(db, owner, S.uploadBytes);
        return { stored: parsed.chunks.map((c) => c.checksum) };
      },
    });

    app.route({
      ...declared('assembleArtifactBundle'),
      config: { auth: UPLOAD_AUTH },
      handler: async (request) => {
        const { checksum, chunks } = request.body;
        if (chunks.length > MAX_ASSEMBLE_CHUNKS)
          throw new ServiceError(
            'payload_too_large',
            `a bundle of more than ${MAX_ASSEMBLE_CHUNKS} chunks of ${S.chunkBytes} bytes (${S.uploadBytes} bytes in all)`,
          );
        const projects = await projectsToWrite(request, request.body.projects);
        const owner = ownerOf(request);

        // Already kept (a second call, sentry-cli's poll, the same build uploaded again): nothing to do.
        if (await everyHas(projects, checksum)) return { state: 'ok' as const, missingChunks: [], detail: 'already stored', stored: 0 };

        const wanted = [...new Set(chunks)];
        const present = await uploadsRepository.presentChunks(db, owner, wanted);
        const missing = wanted.filter((c) => !present.has(c));
        if (missing.length) return { state: 'not_found' as const, missingChunks: missing, detail: null };

        const blob = await joinChunks(owner, chunks, checksum);
        const bundle = readArtifactBundle(blob);
        if (bundle.kind === 'refused') {
          await uploadsRepository.deleteChunks(db, owner, wanted);
          log.warn({ reason: bundle.reason, detail: bundle.detail, projects: projects.map((p) => p.id) }, 'artifact bundle refused');
          throw new ServiceError(REFUSAL_STATUS[bundle.reason], `the bundle was refused (${bundle.reason}): ${bundle.detail}`, {
            body: { reason: bundle.reason },
          });
        }

        const byReason: Record<string, number> = {};
        for (const r of bundle.refused) byReason[r.reason] = (byReason[r.reason] ?? 0) + 1;
        if (bundle.maps.length) {
          for (const project of projects) {
            await sourceMapsRepository.insertBundleOnce(db, project.id, checksum, bundle.maps);
            const swept = await sourceMapsRepository.sweepUploads(db, project.id, S.uploadedBytesPerProject);
            if (swept.length) log.info({ projectId: project.id, bundles: swept.length }, 'oldest uploaded source maps swept');
          }
        }
        await uploadsRepository.deleteChunks(db, owner, wanted);
        if (bundle.refused.length) log.warn({ refused: byReason, projects: projects.map((p) => p.id) }, 'uploaded source maps refused');

        const refusedText = bundle.refused.length
          ? `; refused ${bundle.refused
              .slice(0, 20)
              .map((r) => `${r.mapName} (${r.reason}: ${r.detail})`)
              .join(', ')}${bundle.refused.length > 20 ? `, and ${bundle.refused.length - 20} more` : ''}`
          : '';
        const where = projects.map((p) => p.slug).join(', ');
        if (!bundle.maps.length) {
          // Nothing to keep: a clear refusal (413 when every map was too large), not an `ok` that resolves nothing.
          const tooLarge = bundle.refused.length > 0 && bundle.refused.every((r) => r.reason === 'map_too_large');
          throw new ServiceError(
            tooLarge ? 'payload_too_large' : 'invalid_request',
            `no source map could be kept for ${where} (the bundle held ${bundle.files} files)${refusedText}`,
            { body: { reason: 'no_source_maps', refused: byReason } },
          );
        }
        return {
          state: 'ok' as const,
          missingChunks: [],
          detail: `kept ${bundle.maps.length} source map${bundle.maps.length === 1 ? '' : 's'} for ${where}${refusedText}`,
          stored: bundle.maps.length,
          refused: byReason,
        };
      },
    });
  };

  /** The chunks in order, each checked again against its name, joined and checked against the bundle's SHA-1. */
  async function joinChunks(owner: string, chunks: string[], checksum: string): Promise<Buffer> {
    const stored = await uploadsRepository.readChunks(db, owner, [...new Set(chunks)]);
    const parts: Buffer[] = [];
    let size = 0;
    for (const c of chunks) {
      const bytes = stored.get(c);
      if (!bytes) throw new ServiceError('conflict', `chunk ${c} went away while assembling; upload again`);
      if (createHash('sha1').update(bytes).digest('hex') !== c) throw new ServiceError('invalid_request', `chunk ${c} does not hash to its name`);
      size += bytes.length;
      if (size > S.uploadBytes) throw new ServiceError('payload_too_large', `the bundle is larger than ${S.uploadBytes} bytes`);
      parts.push(bytes);
    }
    const blob = Buffer.concat(parts);
    const actual = createHash('sha1').update(blob).digest('hex');
    if (actual !== checksum) {
      await uploadsRepository.deleteChunks(db, owner, [...new Set(chunks)]);
      throw new ServiceError('invalid_request', `the chunks join to a bundle whose SHA-1 is ${actual}, not ${checksum}`);
    }
    return blob;
  }

  async function everyHas(projects: UploadProject[], checksum: string): Promise<boolean> {
    for (const p of projects) if (!(await sourceMapsRepository.hasBundle(db, p.id, checksum))) return false;
    return true;
  }

  /** Each project named, as one the credential may write; any other refuses the whole call. */
  async function projectsToWrite(request: FastifyRequest, named: string[]): Promise<UploadProject[]> {
    const cred = request.credential;
    if (!cred || cred.kind === 'session') throw new ServiceError('forbidden', 'uploads need a cx_live_ key with sourcemaps:write or a cx_cli_ token');
    const who = cred.kind === 'project_key' ? { projectId: cred.projectId } : { userId: cred.userId };
    const found = await uploadsRepository.uploadProjects(db, who, named);
    const out = new Map<string, UploadProject>();
    for (const name of named) {
      const p = found.find((f) => f.slug === name || f.id === name || f.number === name);
      if (!p) throw new ServiceError('forbidden', `project ${JSON.stringify(name.slice(0, 100))}: no such project, or this credential may not upload to it`);
      out.set(p.id, p);
    }
    return [...out.values()];
  }
}

/** Chunks belong to whoever sent them: a key's project, or a CLI token's user. */
function ownerOf(request: FastifyRequest): string {
  const cred = request.credential;
  if (cred?.kind === 'project_key') return cred.projectId;
  if (cred?.kind === 'cli') return cred.userId;
  throw new ServiceError('forbidden', 'uploads need a cx_live_ key with sourcemaps:write or a cx_cli_ token');
}
