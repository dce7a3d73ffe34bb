import type { Platform } from '../../platform/platform.ts';
import { startIngestServer, type IngestServer } from '../../ingest/ingest-server.ts';
import { createTestPlatform } from './platform.ts';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  addLiveSite,
  createCountingLimiter,
  createIngestProject,
  createRecordingBus,
  projectNumberOf,
  type IngestProject,
  type RecordingBus,
} from './ingest-fixtures.ts';
import { inertAnalytics, inertMailer } from './stubs.ts';

/**
 * An edge on an embedded test platform whose bus records what is published (nothing is processed) and whose
 * limiter counts in memory: for tests of what the edge accepts and refuses.
 */
export interface TestEdge {
  platform: Platform;
  bus: RecordingBus;
  limiter: ReturnType<typeof createCountingLimiter>;
  server: IngestServer;
  base: string;
  /** Resolves once the edge has reloaded its settings twice (anything written before is in its cache). */
  settingsRefreshed(): Promise<void>;
  close(): Promise<void>;
}

/** `sites`: the edge answers site hosts too, as in the single process (anything else: a 404 in place of the API). */
export async function startTestEdge(env: Record<string, string> = {}, opts: { sites?: boolean; largeBodiesBytes?: number } = {}): Promise<TestEdge> {
  const bus = createRecordingBus();
  const limiter = createCountingLimiter();
  const platform = await createTestPlatform({
    env: { SETTINGS_REFRESH_MS: '100', ...env },
    overrides: { bus, limiter, analytics: inertAnalytics, mailer: inertMailer },
  });
  const forward = opts.sites
    ? async () => ({
        status: 404,
        headers: { 'content-type': 'application/json' },
        body: Buffer.from('{"error":"not_found","message":"the API is not part of this test"}'),
      })
    : undefined;
  const server = await startIngestServer(platform, { port: 0, host: '127.0.0.1', forward, largeBodiesBytes: opts.largeBodiesBytes });
  const base = `http://127.0.0.1:${server.port}`;
  const loads = async () => (await (await fetch(`${base}/v1/errors/i/health`)).json()).settingsLoads as number;
  return {
    platform,
    bus,
    limiter,
    server,
    base,
    async settingsRefreshed() {
      const start = await loads();
      while ((await loads()) < start + 2) await new Promise((r) => setTimeout(r, 50));
    },
    async close() {
      await server.close();
      await platform.close();
    },
  };
}

/** An edge with one project that has a live site (an empty artifact) and its DSN's project number: the clients' routes. */
export async function startEdgeWithSite(): Promise<{ edge: TestEdge; project: IngestProject; number: string }> {
  const edge = await startTestEdge();
  const project = await createIngestProject(edge.platform);
  const number = await projectNumberOf(edge.platform, project.projectId);
  await addLiveSite(edge.platform, project.projectId, await mkdtemp(path.join(os.tmpdir(), 'edge-site-')));
  await edge.settingsRefreshed();
  return { edge, project, number };
}
