import net from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dsnPublicKey } from '../../platform/sentry-dsn.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { createIngestProject, projectNumberOf } from '../../test/support/ingest-fixtures.ts';
import { startTestEdge, type TestEdge } from '../../test/support/test-edge.ts';
import { createBodyBudget } from './body-budget.ts';

/**
 * The edge's budget of large bodies (body-budget.ts), playing a visitor who holds the public DSN key: envelopes may be
 * 20 MB, so large bodies held at once are bounded. Here the budget is 26 MB: one 6 MB upload left unfinished holds
 * 6 MB of it; a second large body that does not fit, or a small gzip body that must inflate off the loop (its 20 MB
 * limit reserved), is refused 503 `edge_busy` with a Retry-After, and the same requests are taken once the first is
 * gone.
 */
const MB = 1024 * 1024;
let edge: TestEdge;
let url: string;

beforeAll(async () => {
  edge = await startTestEdge({}, { largeBodiesBytes: 26 * MB });
  const p = await createIngestProject(edge.platform);
  const number = await projectNumberOf(edge.platform, p.projectId);
  await edge.settingsRefreshed();
  url = `/api/${number}/envelope/?sentry_key=${dsnPublicKey(p.ingestKey)}&sentry_version=7`;
});
afterAll(async () => edge?.close());

const line = (o: unknown) => JSON.stringify(o);
const envelopeOf = (attachmentBytes: number) =>
  Buffer.concat([
    Buffer.from(`${line({})}\n${line({ type: 'session' })}\n${line({ sid: 's1', init: true, started: new Date().toISOString(), status: 'ok', errors: 0 })}\n`),
    Buffer.from(`${line({ type: 'attachment', length: attachmentBytes, filename: 'dump.bin' })}\n`),
    Buffer.alloc(attachmentBytes, 0x61),
    Buffer.from('\n'),
  ]);

async function post(body: Buffer, headers: Record<string, string> = {}) {
  const res = await fetch(`${edge.base}${url}`, { method: 'POST', headers: { 'content-type': 'text/plain', ...headers }, body: new Uint8Array(body) });
  return { status: res.status, retryAfter: res.headers.get('retry-after'), json: (await res.json()) as { error?: string } };
}

/** A request whose headers and first bytes are sent, and the rest never: the edge holds its reservation meanwhile. */
async function unfinished(declared: number): Promise<net.Socket> {
  const socket = net.connect(Number(new URL(edge.base).port), '127.0.0.1');
  await new Promise((r) => socket.once('connect', r));
  socket.write(`POST ${url} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nContent-Length: ${declared}\r\n\r\n{}\n`);
  return socket;
}

const busy = async () => ((await (await fetch(`${edge.base}/api/health`)).json()).counters as Record<string, number>).edge_busy ?? 0;

describe("the edge's budget of large bodies", () => {
  it('holds what fits, refuses what does not with 503 edge_busy, and gives it back when a request ends', async () => {
    const before = await busy();
    expect((await post(envelopeOf(6 * MB))).status).toBe(200);
    const held = await unfinished(20 * MB);
    // The upload's 20 MB is held once the edge has read its headers: 6 MB more does not fit into 26.
    await expect.poll(() => edge.server.stats().large_bodies_held_bytes, { timeout: 10_000 }).toBe(20 * MB);
    const refused = await post(envelopeOf(6 * MB));
    expect(refused).toMatchObject({ status: 503, json: { error: 'unavailable' } });
    expect(Number(refused.retryAfter)).toBeGreaterThan(0);
    // A small gzip body that inflates past what is done inline reserves its 20 MB limit first: refused too.
    const bomb = gzipSync(Buffer.alloc(2 * MB, 0x20));
    expect((await post(bomb, { 'content-encoding': 'gzip' })).status).toBe(503);
    // Small bodies are not held to the budget.
    expect((await post(envelopeOf(1024))).status).toBe(200);
    expect((await busy()) - before).toBe(2);

    held.destroy();
    await expect.poll(() => edge.server.stats().large_bodies_held_bytes, { timeout: 10_000 }).toBe(0);
    expect((await post(envelopeOf(6 * MB))).status).toBe(200);
    expect((await post(bomb, { 'content-encoding': 'gzip' })).status).not.toBe(503);
  });

  it('counts what it holds and never goes below nothing', () => {
    const b = createBodyBudget(10);
    expect(b.take(6)).toBe(true);
    expect(b.take(5)).toBe(false);
    expect(b.used).toBe(6);
    b.give(6);
    b.give(6);
    expect(b.used).toBe(0);
    expect(b.take(10)).toBe(true);
    expect(LIMITS.largeBodies.totalBytes).toBeGreaterThanOrEqual(LIMITS.sentryIngest.maxBodyBytes + LIMITS.sentryIngest.maxDecompressedBytes);
  });
});
