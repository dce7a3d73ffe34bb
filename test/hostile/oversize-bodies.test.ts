import net from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApiApp } from '../../api/app.ts';
import { injectForwarder } from '../../ingest/forward.ts';
import { startIngestServer, type IngestServer } from '../../ingest/ingest-server.ts';
import type { Platform } from '../../platform/platform.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { createTestPlatform } from '../support/platform.ts';

/**
 * Row 10 of issue 38: a 20 MB inbound webhook body got a connection reset, not 413. The answer went out after the
 * first megabyte and the connection closed on the unread rest, so a sender that writes its whole body before it
 * reads (Python's requests and urllib, most webhook senders) failed its write with a reset or a broken pipe. Now the
 * rest is read and thrown away first (LIMITS.oversizeBody), and the sender reads the 413 in the spec's error shape.
 * The client here is such a sender, on a raw socket: the whole request must be taken before it reads anything.
 * Real HTTP to the single process's front door (the edge relaying to the API) and to the API role listening itself.
 */
const BIG = 20 * 1024 * 1024;

/** Write the whole request, then read the whole answer; a write the server refused (reset, broken pipe) rejects. */
function writeAllThenRead(port: number, head: string, body: Buffer, chunked = false): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('error', reject);
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.setTimeout(30_000, () => socket.destroy(new Error('no answer within 30 s')));
    socket.on('connect', () => {
      const framing = chunked ? 'transfer-encoding: chunked' : `content-length: ${body.length}`;
      socket.write(`${head}\r\n${framing}\r\n\r\n`);
      const payload = chunked ? Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n0\r\n\r\n')]) : body;
      socket.write(payload, (err) => {
        if (err) return reject(err);
        // Everything was taken: now read the answer (up to its end or the server closing).
        const answer = () => {
          const text = Buffer.concat(chunks).toString();
          const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
          const sep = text.indexOf('\r\n\r\n');
          if (!m || sep < 0) return false;
          const length = /\r\ncontent-length: (\d+)/i.exec(text.slice(0, sep));
          const rest = text.slice(sep + 4);
          if (!length || Buffer.byteLength(rest) < Number(length[1])) return false;
          socket.destroy();
          resolve({ status: Number(m[1]), body: rest.slice(0, Number(length[1])) });
          return true;
        };
        if (!answer()) {
          socket.on('data', answer);
          socket.on('end', () => answer() || reject(new Error(`no complete answer: ${Buffer.concat(chunks).toString().slice(0, 200)}`)));
        }
      });
    });
  });
}

const webhookHead = (port: number) =>
  [
    'POST /v1/webhooks/code_host HTTP/1.1',
    `host: 127.0.0.1:${port}`,
    'content-type: application/json',
    'x-github-event: push',
    'x-github-delivery: oversize-1',
  ].join('\r\n');

describe('a 20 MB inbound webhook body is answered 413 payload_too_large, never a reset', () => {
  let platform: Platform;
  let api: FastifyInstance;
  let edge: IngestServer;
  let apiPort: number;
  beforeAll(async () => {
    platform = await createTestPlatform({ env: { GITHUB_WEBHOOK_SECRETS: 'oversize-secret' } });
    api = await buildApiApp(platform);
    // The single process: one port, the edge relaying what is not its own to the API (service/service.ts).
    edge = await startIngestServer(platform, { port: 0, host: '127.0.0.1', forward: injectForwarder(api) });
    // The API role on a port of its own (the distributed shape: Fastify answers itself).
    await api.listen({ port: 0, host: '127.0.0.1' });
    apiPort = (api.server.address() as net.AddressInfo).port;
  });
  afterAll(async () => {
    await edge?.close();
    await api?.close();
    await platform?.close();
  });

  const body = Buffer.alloc(BIG, 'a');
  it('20 MB is over the inbound limit and within what is drained', () => {
    expect(BIG).toBeGreaterThan(LIMITS.inbound.maxBodyBytes);
    expect(BIG).toBeLessThan(LIMITS.oversizeBody.drainBytes);
  });

  for (const [shape, chunked] of [
    ['declared length', false],
    ['chunked', true],
  ] as const) {
    it(`the single process (edge relaying to the API), ${shape}: the whole body is taken, then 413 JSON`, async () => {
      const res = await writeAllThenRead(edge.port, webhookHead(edge.port), body, chunked);
      expect(res.status).toBe(413);
      expect(JSON.parse(res.body)).toMatchObject({ error: 'payload_too_large', message: expect.stringContaining('1048576') });
    });

    it(`the API role listening itself, ${shape}: the whole body is taken, then 413 JSON`, async () => {
      const res = await writeAllThenRead(apiPort, webhookHead(apiPort), body, chunked);
      expect(res.status).toBe(413);
      expect(JSON.parse(res.body)).toMatchObject({ error: 'payload_too_large', message: expect.any(String) });
    });
  }

  it('a body within the limit still reaches the route (refused for its signature, not its size), and the service answers on', async () => {
    const small = await writeAllThenRead(edge.port, webhookHead(edge.port), Buffer.from('{"zen":"x"}'));
    expect(small.status).toBe(401);
    expect(JSON.parse(small.body).error).toBe('invalid_signature');
  });
});
