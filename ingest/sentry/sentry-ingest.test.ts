import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dsnPublicKey, ingestDsn } from '../../platform/sentry-dsn.ts';
import { computeFingerprint } from '../../processor/errors/fingerprint.ts';
import { createIngestProject, projectNumberOf, setIngestOrigins, type IngestProject } from '../../test/support/ingest-fixtures.ts';
import { startTestEdge, type TestEdge } from '../../test/support/test-edge.ts';

/**
 * Sentry's SDKs as they are, against the edge: the real @sentry/node in a process of its own pointed at a DSN of
 * an ingest key, and Sentry's wire formats by hand for each rule (auth, project number, encodings, item types,
 * origin, rate limits). The browser SDK is tested in Chromium (test/e2e/browser-clients.e2e.test.ts).
 */
let edge: TestEdge;

beforeAll(async () => {
  edge = await startTestEdge();
});
afterAll(async () => edge?.close());

async function project(opts: Parameters<typeof createIngestProject>[1] = {}): Promise<IngestProject & { number: string; dsn: string }> {
  const p = await createIngestProject(edge.platform, opts);
  const number = await projectNumberOf(edge.platform, p.projectId);
  await edge.settingsRefreshed();
  return { ...p, number, dsn: ingestDsn(p.ingestKey, number, edge.base) };
}

const published = (projectId: string) =>
  edge.bus
    .batches()
    .filter((b) => b.projectId === projectId)
    .flatMap((b) => b.events);

function envelope(items: Array<[Record<string, unknown>, unknown]>, header: Record<string, unknown> = {}): string {
  return [JSON.stringify(header), ...items.flatMap(([h, p]) => [JSON.stringify(h), typeof p === 'string' ? p : JSON.stringify(p)])].join('\n');
}
const exceptionEvent = (value = 'boom') => ({
  event_id: 'a'.repeat(32),
  platform: 'javascript',
  exception: {
    values: [
      { type: 'RangeError', value, stacktrace: { frames: [{ filename: 'https://app.example.com/assets/app.js', function: 'render', lineno: 3, colno: 7 }] } },
    ],
  },
});

async function post(
  p: { number: string; ingestKey: string },
  path: 'envelope' | 'store',
  body: string | Buffer,
  headers: Record<string, string> = {},
  auth: 'header' | 'query' | 'none' = 'header',
) {
  const h: Record<string, string> = { 'content-type': 'text/plain;charset=UTF-8', ...headers };
  if (auth === 'header')
    h['x-sentry-auth'] = `Sentry sentry_version=7, sentry_client=sentry.javascript.browser/11.12.0, sentry_key=${dsnPublicKey(p.ingestKey)}`;
  const query = auth === 'query' ? `?sentry_version=7&sentry_key=${dsnPublicKey(p.ingestKey)}` : '';
  const res = await fetch(`${edge.base}/api/${p.number}/${path}/${query}`, {
    method: 'POST',
    headers: h,
    body: typeof body === 'string' ? body : new Uint8Array(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: text ? JSON.parse(text) : undefined };
}

describe('Sentry SDKs: the real @sentry/node', () => {
  it('delivers captureException and captureMessage through the DSN; the events become ours, grouped by their own frames', async () => {
    const p = await project();
    const script = fileURLToPath(new URL('./fixtures/sentry-node-app.mjs', import.meta.url));
    const out = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        [script],
        { env: { ...process.env, SENTRY_DSN: p.dsn, RELEASE: '0123456789abcdef0123456789abcdef01234567' }, timeout: 30_000 },
        (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout)),
      ),
    );
    expect(JSON.parse(out)).toEqual({ delivered: true });
    const events = published(p.projectId);
    const exception = events.find((e) => e.name === 'TypeError')!;
    expect(exception.message).toBe('card declined for order 1234');
    expect(exception.runtime).toBe('node');
    expect(exception.gitSha).toBe('0123456789abcdef0123456789abcdef01234567');
    expect(exception.userId).toBe('usr_42');
    expect(exception.extra).toMatchObject({ orderId: 1234 });
    // The context the real SDK sends (issue 40): tags, level, the SDK, its environment, node's contexts, a breadcrumb.
    expect(exception.context).toMatchObject({
      tags: { area: 'checkout' },
      level: 'error',
      sdk: { name: 'sentry.javascript.node' },
      clientEnvironment: 'production',
      release: '0123456789abcdef0123456789abcdef01234567',
      user: { id: 'usr_42' },
      contexts: { runtime: { name: 'node' } },
    });
    expect(exception.context!.serverName).toBeTruthy();
    expect(exception.context!.breadcrumbs).toContainEqual(expect.objectContaining({ category: 'console', level: 'warning', message: 'charging card 1234' }));
    expect(computeFingerprint(exception.name, exception.message, exception.stack).inAppFrame).toMatchObject({ fn: 'chargeCard', file: script });
    expect(events.find((e) => e.message === 'inventory low')).toBeDefined();
    expect(events.every((e) => !('environment' in e))).toBe(true);
  });
});

describe('Sentry SDKs: the wire rules', () => {
  it("takes the key from X-Sentry-Auth or ?sentry_key=, answers Sentry's { id }, and refuses unknown keys and other projects' numbers", async () => {
    const p = await project();
    const body = envelope([[{ type: 'event' }, exceptionEvent()]], { event_id: 'a'.repeat(32) });
    const viaHeader = await post(p, 'envelope', body);
    expect(viaHeader).toMatchObject({ status: 200, json: { id: 'a'.repeat(32) } });
    expect((await post(p, 'envelope', body, {}, 'query')).status).toBe(200);
    // Our own ways to send a key work too.
    expect((await post(p, 'envelope', body, { authorization: `Bearer ${p.ingestKey}` }, 'none')).status).toBe(200);
    expect(published(p.projectId)).toHaveLength(3);
    expect(published(p.projectId)[0]).toMatchObject({ name: 'RangeError', message: 'boom', runtime: 'browser' });

    expect(await post({ ...p, ingestKey: p.ingestKey.slice(0, -2) + 'AA' }, 'envelope', body)).toMatchObject({ status: 401, json: { error: 'unauthorized' } });
    expect((await post(p, 'envelope', body, {}, 'none')).json.error).toBe('unauthorized');
    const other = await project();
    expect(await post({ ...p, number: other.number }, 'envelope', body)).toMatchObject({ status: 403, json: { error: 'forbidden' } });
  });

  it('store takes one event; gzip, deflate and br bodies are read; past the decompressed limit is 413; an unknown encoding 415', async () => {
    const p = await project();
    expect((await post(p, 'store', JSON.stringify(exceptionEvent('stored')), { 'content-type': 'application/json' })).json).toEqual({ id: 'a'.repeat(32) });
    const gz = gzipSync(Buffer.from(envelope([[{ type: 'event' }, exceptionEvent('zipped')]])));
    expect((await post(p, 'envelope', gz, { 'content-encoding': 'gzip' })).status).toBe(200);
    expect(published(p.projectId).map((e) => e.message)).toEqual(['stored', 'zipped']);

    const bomb = gzipSync(Buffer.alloc(21 * 1024 * 1024, 0x20));
    expect(bomb.length).toBeLessThan(64 * 1024);
    expect(await post(p, 'envelope', bomb, { 'content-encoding': 'gzip' })).toMatchObject({ status: 413, json: { error: 'payload_too_large' } });
    expect(await post(p, 'envelope', 'x', { 'content-encoding': 'compress' })).toMatchObject({ status: 415, json: { error: 'unsupported_media_type' } });
    expect(await post(p, 'envelope', 'not gzip', { 'content-encoding': 'gzip' })).toMatchObject({ status: 400, json: { error: 'invalid_request' } });
    expect(published(p.projectId)).toHaveLength(2);
  });

  it('accepts other item types and drops them, counted by type (a malformed item by its type); a broken envelope is 400', async () => {
    const p = await project();
    const before = (await (await fetch(`${edge.base}/api/health`)).json()).counters;
    const res = await post(
      p,
      'envelope',
      envelope([
        [{ type: 'session' }, { sid: 's' }],
        [{ type: 'transaction' }, { type: 'transaction', spans: [] }],
        [{ type: 'client_report' }, {}],
        [{ type: 'made_up' }, {}],
      ]),
    );
    expect(res.status).toBe(200);
    expect(published(p.projectId)).toHaveLength(0);
    const after = (await (await fetch(`${edge.base}/api/health`)).json()).counters;
    for (const c of ['dropped_invalid_session', 'dropped_item_transaction', 'dropped_item_client_report', 'dropped_item_other'])
      expect(after[c] - (before[c] ?? 0), c).toBe(1);
    expect(await post(p, 'envelope', '{"event_id":1}\n{"type":"event"}\n{not json')).toMatchObject({ status: 400, json: { error: 'invalid_request' } });
    expect(await post(p, 'envelope', '[]')).toMatchObject({ status: 400, json: { error: 'invalid_request' } });
  });

  it('applies the origin rule, and answers rate limits the way Sentry SDKs obey (429, Retry-After, X-Sentry-Rate-Limits)', async () => {
    const p = await project();
    await setIngestOrigins(edge.platform, p.projectId, ['allowed.example.org']);
    await edge.settingsRefreshed();
    const body = envelope([[{ type: 'event' }, exceptionEvent()]]);
    const refused = await post(p, 'envelope', body, { origin: 'https://evil.example.net' });
    expect(refused).toMatchObject({ status: 403, json: { error: 'origin_not_allowed' } });
    expect(refused.headers.get('access-control-allow-origin')).toBe('https://evil.example.net');
    const ok = await post(p, 'envelope', body, { origin: 'https://allowed.example.org' });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe('https://allowed.example.org');
    expect(ok.headers.get('access-control-expose-headers')).toMatch(/X-Sentry-Rate-Limits/i);

    let limited: Awaited<ReturnType<typeof post>> | undefined;
    for (let i = 0; i < 40 && !limited; i++) {
      const r = await post(p, 'envelope', body);
      if (r.status === 429) limited = r;
    }
    expect(limited!.json.error).toBe('rate_limited');
    const retryAfter = Number(limited!.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    // Named categories: an empty list would stop the SDK sending sessions too (sentry-envelope-volume.test.ts).
    expect(limited!.headers.get('x-sentry-rate-limits')).toMatch(new RegExp(`^${retryAfter}:error;default:key:rate_limited, 86400:transaction;`));
  });
});
