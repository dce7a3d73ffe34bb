import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApiApp } from '../../api/app.ts';
import { injectForwarder } from '../../ingest/forward.ts';
import { startIngestServer, type IngestServer } from '../../ingest/ingest-server.ts';
import type { Platform } from '../../platform/platform.ts';
import { siteServerOf, UNKNOWN_HOST_LOOKUPS } from '../../hosting/serve/site-server.ts';
import { httpRequest } from '../support/http-request.ts';
import { createTestPlatform } from '../support/platform.ts';

/**
 * Row 9 of issue 38, through the single process over real HTTP: a stranger flooding random Hosts made every request
 * a site query, twice (the edge looked the Host up, then the API it relayed to looked it up again). Now the edge and
 * the API share one site server, a client address pays for the queries of Hosts that are no site, and past
 * UNKNOWN_HOST_LOOKUPS it is answered 429 rate_limited without a query, while the API's own host answers as ever.
 */
describe('random Hosts flooding the single process', () => {
  let platform: Platform;
  let api: FastifyInstance;
  let edge: IngestServer;
  let base: string;
  beforeAll(async () => {
    platform = await createTestPlatform();
    api = await buildApiApp(platform);
    edge = await startIngestServer(platform, { port: 0, host: '127.0.0.1', forward: injectForwarder(api) });
    base = `http://127.0.0.1:${edge.port}`;
  });
  afterAll(async () => {
    await edge?.close();
    await api?.close();
    await platform?.close();
  });

  it('each address gets UNKNOWN_HOST_LOOKUPS queries of Hosts that are no site, one each; past it 429 with no query', async () => {
    const sites = siteServerOf(platform);
    const before = sites.hostStats.queries;
    const N = UNKNOWN_HOST_LOOKUPS.perAddress + 90;
    const statuses: number[] = [];
    for (let i = 0; i < N; i++) {
      const res = await httpRequest(base, 'GET', '/v1/', { host: `flood-${i}-${Date.now()}.example.net` });
      statuses.push(res.status);
      if (res.status === 429) expect(JSON.parse(res.body)).toMatchObject({ error: 'rate_limited' });
    }
    // One query per Host (the API relayed to did not look it up again), and no more than the allowance.
    expect(sites.hostStats.queries - before).toBe(UNKNOWN_HOST_LOOKUPS.perAddress);
    expect(statuses.filter((s) => s === 200)).toHaveLength(UNKNOWN_HOST_LOOKUPS.perAddress);
    expect(statuses.filter((s) => s === 429)).toHaveLength(N - UNKNOWN_HOST_LOOKUPS.perAddress);
    // The service's own host is no site by rule: it answers during the flood, and costs no query.
    const own = await httpRequest(base, 'GET', '/v1/', { host: `127.0.0.1:${edge.port}` });
    expect(own.status).toBe(200);
    expect(JSON.parse(own.body).apiVersion).toBe('v1');
    expect(sites.hostStats.queries - before).toBe(UNKNOWN_HOST_LOOKUPS.perAddress);
  });
});
