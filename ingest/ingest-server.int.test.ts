import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Platform } from '../platform/platform.ts';
import { newId } from '../platform/tokens.ts';
import { decodeErrorBatch } from '../schemas/bus/error-events.ts';
import type { StampedErrorBatch } from '../schemas/error-event.ts';
import { LIMITS } from '../schemas/limits.ts';
import { TOPICS } from '../schemas/topics.ts';
import { backendUrl, describeWith } from '../test/support/backends.ts';
import { loadKafkajs } from '../platform/adapters/bus/kafkajs-runtime.ts';
import { createTestPlatform } from '../test/support/platform.ts';
import { createIngestProject } from '../test/support/ingest-fixtures.ts';
import { startIngestServer, type IngestServer } from './ingest-server.ts';
import { inertAnalytics, inertMailer } from '../test/support/stubs.ts';

function event(message: string) {
  return { name: 'Error', message, stack: 'Error: x\n    at f (src/a.ts:1:2)' };
}

async function post(url: string, key: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${url}/v1/errors/i`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, json: await res.json().catch(() => undefined) };
}

describeWith(['postgres', 'kafka', 'redis'], 'ingest edge on Postgres + Kafka + Redis', () => {
  let a: Platform;
  let b: Platform;
  let edgeA: IngestServer;
  let edgeB: IngestServer;

  beforeAll(async () => {
    // Two edges, each with its own Kafka producer and Redis connection, behind one trusted proxy.
    const opts = {
      real: { postgres: true, kafka: true, redis: true },
      env: { TRUST_PROXY: 'true', SETTINGS_REFRESH_MS: '200' },
      overrides: { analytics: inertAnalytics, mailer: inertMailer },
    };
    a = await createTestPlatform(opts);
    b = await createTestPlatform(opts);
    edgeA = await startIngestServer(a, { port: 0, host: '127.0.0.1' });
    edgeB = await startIngestServer(b, { port: 0, host: '127.0.0.1' });
  });

  afterAll(async () => {
    await edgeA?.close();
    await edgeB?.close();
    await a?.close();
    await b?.close();
  });

  async function refreshed(url: string) {
    const loads = async () => (await (await fetch(`${url}/v1/errors/i/health`)).json()).settingsLoads as number;
    const start = await loads();
    while ((await loads()) < start + 2) await new Promise((r) => setTimeout(r, 50));
  }

  it('answers 202 only once Kafka holds the batch: the stamped batch is consumed back', async () => {
    const p = await createIngestProject(a);
    await refreshed(`http://127.0.0.1:${edgeA.port}`);
    const marker = newId('m_');
    const res = await post(
      `http://127.0.0.1:${edgeA.port}`,
      p.ingestKey,
      { batch: [event(marker), event(`${marker}-2`)] },
      { origin: 'https://app.example.com' },
    );
    expect(res.status).toBe(202);
    expect(res.json).toEqual({ ingested: 2 });

    const { Kafka, logLevel } = loadKafkajs().kafkajs;
    const kafka = new Kafka({ clientId: 'ingest-int-test', brokers: backendUrl('kafka')!.split(','), logLevel: logLevel.NOTHING });
    const consumer = kafka.consumer({ groupId: newId('ingest-test-') });
    await consumer.connect();
    try {
      await consumer.subscribe({ topic: TOPICS.errorEvents, fromBeginning: true });
      const found = await new Promise<{ key: string; batch: StampedErrorBatch }>((resolve) => {
        void consumer.run({
          eachMessage: async ({ message }) => {
            if (message.key?.toString() !== p.projectId) return;
            resolve({ key: message.key.toString(), batch: decodeErrorBatch(message.value!)! });
          },
        });
      });
      expect(found.batch.projectId).toBe(p.projectId);
      expect(found.batch.originHost).toBe('app.example.com');
      expect(found.batch.events.map((e) => e.message)).toEqual([marker, `${marker}-2`]);
      expect(found.batch.events.every((e) => e.runtime === 'browser' && e.eventId)).toBe(true);
    } finally {
      await consumer.disconnect();
    }
  });

  it('two edges sharing the Redis limiter share the 200 per minute per key budget', async () => {
    const p = await createIngestProject(a);
    const urls = [`http://127.0.0.1:${edgeA.port}`, `http://127.0.0.1:${edgeB.port}`];
    await Promise.all(urls.map(refreshed));
    const { perKeyPerMinute, perKeyAndIpPerMinute } = LIMITS.errorIngestRate;
    // The window slides: however the ~200 requests below fall across clock minutes, none frees a hit for a minute.
    const statuses: number[] = [];
    // Distinct client IPs (X-Forwarded-For from the trusted proxy), so only the per-key limit binds.
    for (let i = 0; i < perKeyPerMinute; i++) {
      const ip = `198.51.100.${Math.floor(i / perKeyAndIpPerMinute)}`;
      statuses.push((await post(urls[i % 2], p.ingestKey, { batch: [event('x')] }, { 'x-forwarded-for': ip })).status);
    }
    expect(statuses.every((s) => s === 202)).toBe(true);
    for (const url of urls) {
      const res = await post(url, p.ingestKey, { batch: [event('x')] }, { 'x-forwarded-for': '203.0.113.77' });
      expect(res.status).toBe(429);
      expect(res.json.error).toBe('rate_limited');
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    }
  });
});
