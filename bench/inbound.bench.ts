/**
 * Inbound provider deliveries against deploy hook calls (issue 25; aim: inbound ≥ 0.8x the hook), in one run of the
 * single process (`start('all')`, embedded). Both authenticate from the request alone and hand work to the bus:
 *   hook      `POST /v1/hooks/:token` of a preview branch: token lookup, rate limits, a queued deploy (deduplicated)
 *   inbound   `POST /v1/webhooks/code_host`: a GitHub `push` of a connected repository's preview branch, signed with
 *             X-Hub-Signature-256, each request its own X-GitHub-Delivery (so none is a replay): verify, remember the
 *             delivery, publish; the processor queues the deploy (deduplicated while queued)
 * autocannon runs in a child process. Prints JSON.
 * `--kafka`: the distributed shape instead: the API role on Postgres, Kafka (librdkafka's mock cluster in a process of
 * its own), ClickHouse and Redis, and the processor role in a child process; the route returns once Kafka holds the
 * delivery, and the processor's statements run in the other process.
 *
 *   npx tsx bench/inbound.bench.ts [--duration 8] [--connections 50] [--kafka]
 */
import { spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { usersRepository } from '../api/accounts/users-repository.ts';
import { loadConfig } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { start } from '../service/service.ts';
import { allowAllLimiter } from '../test/support/ingest-fixtures.ts';
import { cannon, type CannonResult } from './support/autocannon.ts';
import { numberArg } from './support/cli-args.ts';

const DURATION = numberArg('duration', 8);
const CONNECTIONS = numberArg('connections', 50);
const SECRET = 'bench-github-secret';

function cannonUnique(url: string, headers: Record<string, string>, body: string): Promise<CannonResult> {
  const opts = JSON.stringify({ url, connections: CONNECTIONS, durationSec: DURATION, headers, body, unique: 'x-github-delivery' });
  return new Promise((resolve, reject) => {
    const child = spawn(path.resolve('node_modules/.bin/tsx'), ['bench/support/cannon-unique.ts', opts], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.on('close', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`load generator exited ${code}`))));
  });
}

const KAFKA = process.argv.includes('--kafka');

async function main() {
  const env: Record<string, string> = {
    DATA_DIR: await mkdtemp(path.join(os.tmpdir(), 'bench-inbound-')),
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    GITHUB_WEBHOOK_SECRETS: SECRET,
  };
  const cleanups: Array<() => Promise<unknown>> = [];
  if (KAFKA) {
    const { startKafkaMockProcess } = await import('../test/support/kafka-mock-process.ts');
    const { startChdbHttpServer } = await import('../test/support/chdb-http-server.ts');
    const { isolatedBus } = await import('../test/e2e/support/isolated-bus.ts');
    const kafka = await startKafkaMockProcess({ dataPath: 'direct' });
    const ch = await startChdbHttpServer({ dataDir: await mkdtemp(path.join(os.tmpdir(), 'bench-inbound-chdb-')) });
    const { startSmtpReceiver } = await import('../test/support/smtp-receiver.ts');
    const smtp = await startSmtpReceiver();
    cleanups.push(
      () => kafka.stop(),
      () => ch.stop(),
      () => smtp.stop(),
    );
    Object.assign(env, {
      DATABASE_URL: process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
      CLICKHOUSE_URL: ch.url,
      KAFKA_BROKERS: kafka.brokers,
      REDIS_URL: process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379',
      PUBLIC_BASE_URL: 'http://localhost:8080',
      SMTP_URL: smtp.url,
      ...isolatedBus('bench-inbound'),
    });
  }
  const stdoutWrite = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string | Uint8Array) => process.stderr.write(chunk)) as typeof process.stdout.write;
  const running = await start(KAFKA ? 'api' : 'all', loadConfig(env), createLogger('silent', 'bench'), {
    testing: { overrides: { limiter: allowAllLimiter } },
  }).finally(() => {
    process.stdout.write = stdoutWrite;
  });
  if (KAFKA) {
    const { spawnRole } = await import('../test/e2e/support/spawn-role.ts');
    const processor = await spawnRole('processor', env);
    cleanups.unshift(() => processor.stop());
  }
  const base = `http://127.0.0.1:${running.port}`;
  const email = `bench-${Date.now()}@example.test`;
  await usersRepository.createUser(running.platform.db, { email, password: 'bench-password-1234' });
  const signIn = await fetch(`${base}/v1/auth/sign-in`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password: 'bench-password-1234' }),
  });
  const cookie = signIn.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .find((c) => c.startsWith('cx_session='))!;
  const call = async (method: string, url: string, body?: unknown) =>
    (
      await fetch(`${base}${url}`, {
        method,
        headers: { cookie, 'sec-fetch-site': 'same-origin', 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
    ).json() as Promise<Record<string, any>>;

  const project = (await call('POST', '/v1/projects', { name: 'inbound bench', slug: `inbound-${Date.now()}` })).project;
  // A local repository as the source, so nothing reaches the network; builds of a preview stay queued while one runs.
  await running.platform.db.query(
    `INSERT INTO project_build_settings (project_id, repo_url, build_command, output_dir) VALUES ($1, '/nonexistent/bench-repo', '', '.') ON CONFLICT DO NOTHING`,
    [project.id],
  );
  await running.platform.db.query(
    `INSERT INTO github_connections (id, project_id, repo_full_name, clone_url, created_at) VALUES ('ghc_bench', $1, 'bench/site', 'https://github.com/bench/site.git', now())`,
    [project.id],
  );
  const hook = (await call('POST', `/v1/projects/${project.slug}/deploys/hooks`, { name: 'bench', branch: 'preview-branch' })).hook;

  const result = (r: CannonResult) => ({
    rps: Math.round(r.requests.average),
    p50ms: r.latency.p50,
    p99ms: r.latency.p99,
    ok2xx: r['2xx'],
    non2xx: r.non2xx,
    errors: r.errors,
  });
  const rounds: Array<Record<string, unknown>> = [];
  const body = JSON.stringify({
    ref: 'refs/heads/preview-branch',
    after: 'a'.repeat(40),
    repository: { full_name: 'bench/site' },
    head_commit: { message: 'bench' },
  });
  const signature = `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`;
  for (let round = 1; round <= 2; round++) {
    const hookRun = result(
      await cannon(`${base}/v1/hooks/${hook.token}`, {
        connections: CONNECTIONS,
        durationSec: DURATION,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      }),
    );
    const inboundRun = result(
      await cannonUnique(
        `${base}/v1/webhooks/code_host`,
        { 'content-type': 'application/json', 'x-github-event': 'push', 'x-hub-signature-256': signature },
        body,
      ),
    );
    rounds.push({ round, hook: hookRun, inbound: inboundRun, inboundOverHook: +(inboundRun.rps / hookRun.rps).toFixed(2) });
    process.stderr.write(`round ${round}: hook ${hookRun.rps}/s, inbound ${inboundRun.rps}/s\n`);
  }
  await running.stop();
  for (const c of cleanups) await c().catch(() => undefined);
  console.log(
    JSON.stringify(
      {
        bench: 'inbound',
        machine: { nproc: os.cpus().length, cpu: os.cpus()[0]?.model, node: process.version },
        settings: {
          durationSec: DURATION,
          connections: CONNECTIONS,
          shape: KAFKA ? 'api + processor on Postgres, Kafka, ClickHouse, Redis' : 'one process, embedded',
        },
        rounds,
      },
      null,
      2,
    ),
  );
  process.exit(0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
