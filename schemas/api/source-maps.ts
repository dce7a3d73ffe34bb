import { z } from 'zod';
import { LIMITS } from '../limits.ts';
import { errorAnswers } from './common.ts';
import { routeShapes } from './route-shape.ts';

/**
 * Source map uploads for builds made elsewhere (issue 37), on sentry-cli's own routes so `sentry-cli sourcemaps upload`
 * works unchanged (`--url` = this service): its chunk-upload options, the chunk upload, and the artifact-bundle assemble.
 * They live at the root, under `/api/0/`, with sentry-cli's trailing slashes: the CLI builds every URL as
 * `{--url}/api/0/{path}` and refuses a base URL with a path, so they cannot sit under `/v1`. `cx sourcemaps upload`
 * calls the same routes (paths in route-table.ts). `:org` is any value (there are no organizations here): the project
 * comes from the assemble's `projects`, each a project slug, a `prj_` id or a DSN's project number. sentry-cli sends no
 * query parameters (3.x: none on any of the three), so the routes take none.
 */

/** The most chunks one assemble may name: one upload's bytes in chunks. */
export const MAX_ASSEMBLE_CHUNKS = Math.ceil(LIMITS.sourceMaps.uploadBytes / LIMITS.sourceMaps.chunkBytes);

export const OrgParams = z.object({ org: z.string().min(1).max(200) });

const Sha1 = z
  .string()
  .regex(/^[0-9a-fA-F]{40}$/, 'a SHA-1 in hex (40 characters)')
  .transform((s) => s.toLowerCase());

/** `GET .../chunk-upload/`: how sentry-cli cuts and sends chunks (field names are sentry-cli's). */
export const ChunkUploadOptions = z.object({
  url: z.string().describe('where chunks are POSTed (relative: sentry-cli joins it to its --url)'),
  chunkSize: z.number().int(),
  chunksPerRequest: z.number().int(),
  maxRequestSize: z.number().int(),
  maxFileSize: z.number().int(),
  maxWait: z.number().int(),
  concurrency: z.number().int(),
  hashAlgorithm: z.literal('sha1'),
  compression: z.array(z.string()),
  accept: z.array(z.string()).describe('sentry-cli 2.x needs artifact_bundles_v2 here; 3.x ignores it'),
});
export type ChunkUploadOptions = z.infer<typeof ChunkUploadOptions>;

/** `POST .../chunk-upload/`: which chunks were taken. */
export const ChunkUploadAnswer = z.object({ stored: z.array(z.string()).describe('SHA-1 of each chunk now held for the caller') });
export type ChunkUploadAnswer = z.infer<typeof ChunkUploadAnswer>;

/** `POST .../artifactbundle/assemble/`, as sentry-cli sends it. */
export const AssembleBody = z.object({
  checksum: Sha1.describe('SHA-1 of the whole bundle'),
  chunks: z
    .array(Sha1)
    .min(1)
    .max(4 * MAX_ASSEMBLE_CHUNKS)
    .describe(`SHA-1 of each chunk in order (an upload of more than ${MAX_ASSEMBLE_CHUNKS} is 413)`),
  projects: z
    .array(z.string().min(1).max(200))
    .min(1)
    .max(20)
    .describe('project slugs (or prj_ ids, or DSN project numbers): each one the credential may upload to'),
  version: z.string().max(250).optional().describe('release; kept by Sentry, not needed here (debug ids and paths find maps)'),
  dist: z.string().max(250).optional(),
});
export type AssembleBody = z.input<typeof AssembleBody>;

export const ASSEMBLE_STATES = ['not_found', 'created', 'assembling', 'ok', 'error'] as const;

/** The assemble's answer: sentry-cli reads `state`, `missingChunks` (always present) and `detail`; the rest is ours. */
export const AssembleAnswer = z.object({
  state: z.enum(ASSEMBLE_STATES),
  missingChunks: z.array(z.string()),
  detail: z.string().nullable(),
  stored: z.number().int().optional().describe('maps stored from this bundle (per project)'),
  refused: z.record(z.string(), z.number().int()).optional().describe('maps refused, by reason'),
});
export type AssembleAnswer = z.infer<typeof AssembleAnswer>;

const tags = ['source-maps'];
const S = LIMITS.sourceMaps;

/** The family's routes (paths in route-table.ts). */
export const sourceMapRoutes = routeShapes({
  chunkUploadOptions: {
    tags,
    summary: "sentry-cli's chunk-upload options: how to cut and send an artifact bundle",
    params: OrgParams,
    response: { 200: ChunkUploadOptions },
  },
  uploadChunks: {
    tags,
    summary: `Upload chunks (multipart/form-data: parts "file" or "file_gzip", filename = the chunk's SHA-1, at most ${S.chunkBytes} bytes each); held an hour for the caller`,
    params: OrgParams,
    consumes: ['multipart/form-data'],
    response: { 200: ChunkUploadAnswer, ...errorAnswers(400, 413, 415) },
  },
  assembleArtifactBundle: {
    tags,
    summary: 'Assemble an artifact bundle from its chunks and keep its source maps (as sentry-cli calls it: missing chunks, then ok or error)',
    params: OrgParams,
    body: AssembleBody,
    response: { 200: AssembleAnswer, ...errorAnswers(400, 403, 413) },
  },
});
