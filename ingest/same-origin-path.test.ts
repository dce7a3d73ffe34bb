import http from 'node:http';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addIngestKey, addLiveSite, createIngestProject, revokeKey, setIngestOrigins } from '../test/support/ingest-fixtures.ts';
import { startTestEdge, type TestEdge } from '../test/support/test-edge.ts';

/**
 * §7.1's same-origin path: cx.js on a site the platform serves posts to `/service/v1/errors/i` on the site's own
 * host, and the edge attaches the project's ingest key (the oldest live one): no key in the page. The Host names
 * the project (`<slug>.<SITES_DOMAIN>`, `<deploy-id>.<SITES_DOMAIN>`, a verified custom domain with a live deploy);
 * every other rule of error ingest holds (origin, limits per key and the caller's IP, validation).
 */
let edge: TestEdge;
let artifact: string;

beforeAll(async () => {
  edge = await startTestEdge({ SITES_DOMAIN: 'sites.test' });
  artifact = await mkdtemp(path.join(os.tmpdir(), 'site-'));
});
afterAll(async () => edge?.close());

/** A POST with our own Host header (fetch may not set one). */
function postAs(
  host: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; json: { error?: string; ingested?: number } }> {
  const payload = typeof body === 'string' ? body : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${edge.base}/service/v1/errors/i`,
      { method: 'POST', headers: { host, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...headers } },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, json: text ? JSON.parse(text) : {} }));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

const batch = { batch: [{ name: 'TypeError', message: 'x is undefined', stack: 'TypeError: x\n    at render (https://shop.example.com/app.js:1:2)' }] };

describe('the same-origin path on site hosts', () => {
  it("takes a batch on a site host with the project's oldest live ingest key attached, stamped like any other", async () => {
    const p = await createIngestProject(edge.platform, { productionDomains: ['shop.example.com'] });
    const { deployId } = await addLiveSite(edge.platform, p.projectId, artifact);
    // A custom domain is a site once its project verified it (api/domains/).
    await edge.platform.db.query(`INSERT INTO project_domains (project_id, domain, token, verified_at) VALUES ($1, 'shop.example.com', 't', now())`, [
      p.projectId,
    ]);
    const later = await addIngestKey(edge.platform, p.projectId);
    await edge.settingsRefreshed();

    const hits = edge.limiter.hits.size;
    for (const host of [`${p.slug}.sites.test`, `${deployId.replace(/_/g, '-')}.sites.test:8080`, 'shop.example.com']) {
      const res = await postAs(host, batch, { origin: `https://${host}` });
      expect(res.status, host).toBe(202);
      expect(res.json).toEqual({ ingested: 1 });
    }
    const published = edge.bus.batches().filter((b) => b.projectId === p.projectId);
    expect(published).toHaveLength(3);
    expect(published[2]!.originHost).toBe('shop.example.com');
    expect(published[2]!.events[0]).toMatchObject({ name: 'TypeError', runtime: 'browser' });
    // Limits count against the oldest key and the caller's own address.
    const keys = [...edge.limiter.hits.keys()].slice(hits);
    expect(keys).toContain(`errors:ki:${p.keyId}:127.0.0.1`);
    expect(keys.some((k) => k.includes(later.keyId))).toBe(false);

    // Revoke the oldest: the next one is attached.
    await revokeKey(edge.platform, p.keyId);
    await edge.settingsRefreshed();
    expect((await postAs(`${p.slug}.sites.test`, batch)).status).toBe(202);
    expect([...edge.limiter.hits.keys()]).toContain(`errors:k:${later.keyId}`);
  });

  it('is 404 on a host that is no site, 401 for a project without a live ingest key, and keeps the origin rule', async () => {
    expect(await postAs('127.0.0.1', batch)).toMatchObject({ status: 404, json: { error: 'not_found' } });
    expect(await postAs('nobody.sites.test', batch)).toMatchObject({ status: 404, json: { error: 'not_found' } });
    expect(await postAs('unknown.example.com', batch)).toMatchObject({ status: 404, json: { error: 'not_found' } });

    const keyless = await createIngestProject(edge.platform);
    await revokeKey(edge.platform, keyless.keyId);
    await edge.settingsRefreshed();
    expect(await postAs(`${keyless.slug}.sites.test`, batch)).toMatchObject({ status: 401, json: { error: 'unauthorized' } });

    const p = await createIngestProject(edge.platform);
    await setIngestOrigins(edge.platform, p.projectId, ['only.example.org']);
    await edge.settingsRefreshed();
    const refused = await postAs(`${p.slug}.sites.test`, batch, { origin: 'https://elsewhere.example.net' });
    expect(refused).toMatchObject({ status: 403, json: { error: 'origin_not_allowed' } });
    expect((await postAs(`${p.slug}.sites.test`, batch, { origin: 'https://only.example.org' })).status).toBe(202);
    // The site's own pages are always the project's own (issue 23), whatever the list says: the slug host and a
    // deploy host, on any port; another site's page is not.
    const { deployId } = await addLiveSite(edge.platform, p.projectId, artifact);
    await edge.settingsRefreshed();
    const deployHost = `${deployId.replace(/_/g, '-')}.sites.test`;
    for (const [host, origin] of [
      [`${p.slug}.sites.test`, `https://${p.slug}.sites.test`],
      [`${p.slug}.sites.test:8080`, `http://${p.slug}.sites.test:8080`],
      [deployHost, `https://${deployHost}`],
    ]) {
      expect((await postAs(host!, batch, { origin: origin! })).status, host).toBe(202);
    }
    expect((await postAs(`${p.slug}.sites.test`, batch, { origin: `https://${keyless.slug}.sites.test` })).status).toBe(403);
    expect(await postAs(`${p.slug}.sites.test`, { batch: [] })).toMatchObject({ status: 400, json: { error: 'invalid_request' } });
    expect(await postAs(`${p.slug}.sites.test`, 'x'.repeat(70 * 1024))).toMatchObject({ status: 413, json: { error: 'payload_too_large' } });
    // A key in the request changes nothing: the Host decides.
    expect((await postAs(`${p.slug}.sites.test`, batch, { authorization: 'Bearer cak_live_nope', origin: 'https://only.example.org' })).status).toBe(202);
  });
});
