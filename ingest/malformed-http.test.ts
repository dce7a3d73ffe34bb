import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Platform } from '../platform/platform.ts';
import { createRecordingBus } from '../test/support/ingest-fixtures.ts';
import { createTestPlatform } from '../test/support/platform.ts';
import { startIngestServer, type IngestServer } from './ingest-server.ts';
import { inertAnalytics, inertMailer } from '../test/support/stubs.ts';

/**
 * Malformed and unusual HTTP at the edge, over raw sockets. In the single process the edge is the front
 * door, so every case must end: an answer where uWebSockets.js lets us give one, otherwise a closed
 * connection, and the edge serves the next client. What uWebSockets.js 20.30 (the build that loads on these
 * machines) does with each, and what the README says about it:
 * - closed at once, without an answer: a chunk longer than its declared size, a chunk extension, both
 *   Content-Length and Transfer-Encoding, an unknown method;
 * - closed by its own idle timeout (about 10 s), without an answer: HTTP/1.0, more than 48 request
 *   headers, a NUL byte in a header value. Its parser waits for more data and never calls our handlers, so
 *   nothing in JavaScript can answer them; the reverse proxy in front (deploy/Caddyfile) speaks HTTP/1.1
 *   upstream and refuses malformed headers itself.
 */
/** uWebSockets.js closes an idle HTTP connection after 10 s (HTTP_IDLE_TIMEOUT_S); a little slack. */
const IDLE_TIMEOUT_MS = 10_000;

let platform: Platform;
let server: IngestServer;

beforeAll(async () => {
  platform = await createTestPlatform({ overrides: { bus: createRecordingBus(), analytics: inertAnalytics, mailer: inertMailer } });
  // Single-process mode: every other request is relayed (here to a stand-in API that answers 200).
  server = await startIngestServer(platform, {
    port: 0,
    host: '127.0.0.1',
    forward: async () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: Buffer.from('{"ok":true}') }),
  });
});

afterAll(async () => {
  await server?.close();
  await platform?.close();
});

/** Send raw bytes; resolve with what came back once the edge closed the connection, or `open` after `waitMs`. */
function exchange(raw: string | Buffer, waitMs: number): Promise<{ response: string; closedByEdge: boolean }> {
  return new Promise((resolve) => {
    let response = '';
    const socket = net.connect(server.port, '127.0.0.1', () => socket.write(raw));
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ response, closedByEdge: false });
    }, waitMs);
    socket.on('data', (d) => (response += d.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ response, closedByEdge: true });
    });
  });
}

const ingestHead = (extra: string) => `POST /v1/errors/i HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${extra}\r\n`;

async function edgeStillServes(): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${server.port}/v1/errors/i/health`);
  expect(res.status).toBe(200);
}

describe('malformed HTTP at the edge', () => {
  it('answers well-formed HTTP/1.1 (the baseline the cases below differ from)', async () => {
    const r = await exchange('GET /v1/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 5_000);
    expect(r.response).toMatch(/^HTTP\/1\.1 200/);
  });

  it('closes at once: a chunk longer than declared, a chunk extension, Content-Length with Transfer-Encoding, an unknown method', async () => {
    const cases = {
      chunkLongerThanDeclared: ingestHead('Transfer-Encoding: chunked\r\n') + '2\r\n{"batch":[]}\r\n0\r\n\r\n',
      chunkExtension: ingestHead('Transfer-Encoding: chunked\r\n') + '2;ext=1\r\n{}\r\n0\r\n\r\n',
      contentLengthAndChunked: ingestHead('Content-Length: 5\r\nTransfer-Encoding: chunked\r\n') + '0\r\n\r\n',
      unknownMethod: 'BREW /v1/ HTTP/1.1\r\nHost: x\r\n\r\n',
    };
    // Well before the idle timeout: nothing is left hanging.
    const results = await Promise.all(Object.entries(cases).map(async ([name, raw]) => [name, await exchange(raw, IDLE_TIMEOUT_MS / 2)] as const));
    for (const [name, r] of results) expect({ name, ...r }).toEqual({ name, response: '', closedByEdge: true });
    await edgeStillServes();
  });

  it('HTTP/1.0, more than 48 headers and a NUL in a header value end at the idle timeout, and the edge keeps serving', async () => {
    const cases = {
      http10: 'GET /v1/ HTTP/1.0\r\nHost: x\r\n\r\n',
      http10Ingest: 'POST /v1/errors/i HTTP/1.0\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}',
      tooManyHeaders: `GET /v1/ HTTP/1.1\r\nHost: x\r\n${Array.from({ length: 60 }, (_, i) => `X-H${i}: v\r\n`).join('')}\r\n`,
      nulInHeaderValue: 'GET /v1/ HTTP/1.1\r\nHost: x\r\nX-A: a\u0000b\r\n\r\n',
    };
    const results = await Promise.all(Object.entries(cases).map(async ([name, raw]) => [name, await exchange(raw, IDLE_TIMEOUT_MS + 5_000)] as const));
    // Closed by the edge itself, not by this test giving up; uWebSockets.js sends no status for these.
    for (const [name, r] of results) expect({ name, ...r }).toEqual({ name, response: '', closedByEdge: true });
    await edgeStillServes();
  });
});
