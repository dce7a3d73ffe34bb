/**
 * The edge's rate limits on Redis, as the edge asks them: one `hitAll` per request with its two keys (key and IP, key),
 * each request issued from a macrotask of its own (as uWebSockets.js delivers them), `--concurrency` at a time.
 * Prints JSON: requests per second, this process's CPU microseconds per request, and Redis's own CPU per request
 * (from INFO cpu), so a change of the limiter's rule is measured on both sides of the socket. Run it in two checkouts
 * with bench/compare-commits.sh to compare two limiters in one sitting.
 *
 *   [BENCH_REDIS_URL=redis://127.0.0.1:6379] npx tsx bench/rate-limits.bench.ts [--requests 20000] [--concurrency 50] [--ips 500]
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { createRedisLimiter } from '../platform/adapters/rate-limit/redis-limiter.ts';
import { numberArg } from './support/cli-args.ts';

const REQUESTS = numberArg('requests', 20_000);
const CONCURRENCY = numberArg('concurrency', 50);
const IPS = numberArg('ips', 500);
const url = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

async function redisCpuSeconds(redis: Redis): Promise<number> {
  const info = await redis.info('cpu');
  const field = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? 0);
  return field('used_cpu_sys') + field('used_cpu_user');
}

const prefix = `bench-rl-${randomUUID().slice(0, 8)}`;
const limiter = await createRedisLimiter(url, undefined, prefix);
const admin = new Redis(url);
const project = 'key_bench';
// Limits high enough that nothing is refused: the bench measures the counting, not the refusals.
const hits = (i: number) => [
  { key: `${project}:ip:10.0.${(i % IPS) >> 8}.${(i % IPS) & 255}`, limit: 1_000_000, windowMs: 60_000 },
  { key: `${project}`, limit: 1_000_000, windowMs: 60_000 },
];

// Warm-up: the script is loaded, the connection is up.
await limiter.hitAll(hits(0));
const redisCpu0 = await redisCpuSeconds(admin);
const cpu0 = process.cpuUsage();
const t0 = performance.now();
let next = 0;
let refused = 0;
await Promise.all(
  Array.from({ length: CONCURRENCY }, async () => {
    while (next < REQUESTS) {
      const i = next++;
      await new Promise((r) => setImmediate(r));
      const d = await limiter.hitAll(hits(i));
      if (!d.every((x) => x.allowed)) refused++;
    }
  }),
);
const seconds = (performance.now() - t0) / 1000;
const cpu = process.cpuUsage(cpu0);
const redisCpu = (await redisCpuSeconds(admin)) - redisCpu0;
process.stdout.write(
  `${JSON.stringify({
    requests: REQUESTS,
    concurrency: CONCURRENCY,
    refused,
    requestsPerSec: Math.round(REQUESTS / seconds),
    clientCpuMicrosPerRequest: +((cpu.user + cpu.system) / REQUESTS).toFixed(1),
    redisCpuMicrosPerRequest: +((redisCpu * 1e6) / REQUESTS).toFixed(1),
  })}\n`,
);
const keys = await admin.keys(`${prefix}*`);
if (keys.length) await admin.del(...keys);
await limiter.close();
admin.disconnect();
