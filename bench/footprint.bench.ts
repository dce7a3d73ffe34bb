/**
 * The footprint of `npm start`'s embedded default at rest and at low volume (issue 44): CPU at rest, CPU per event
 * at a few steady rates, and the peak memory of the whole process tree, to set beside Bugsink's (bench/README.md).
 *
 * The service is spawned as `npm start` runs it (service/start.sh: service/build.mjs, glibc's malloc thresholds, then
 * `node --enable-source-maps dist/service/main.js`; `--tsx`: the source under tsx, as `npm start` ran it before issue 44;
 * `--node-arg`: node itself with those arguments and the compiled service, without start.sh's malloc settings)
 * with its own DATA_DIR in a temporary directory, PORT on 127.0.0.1, the owner's password set so the bench can sign
 * in, and TRUST_PROXY so X-Forwarded-For spreads the per key-and-IP limit. Through the API: `--projects` projects,
 * `--keys` ingest keys in all (each answer carries the key's DSN), so that no per-key limit bites
 * (LIMITS.errorIngestRate). Then:
 *   - at rest: no traffic for `--rest` seconds (after `--settle` seconds of quiet), CPU seconds of the process tree
 *     per wall second (cores);
 *   - for each of `--rates`: one Sentry error event per request (a browser SDK's envelope, unique event id) to
 *     `POST /api/<project>/envelope/`, evenly paced by an open loop in this process for `--seconds` seconds over every
 *     key; CPU of the tree during the window per event, and again including the drain (until every event is
 *     visible in the API: the issues' counts add up to every event accepted); whether that took ≤ 10 s.
 * Throughout: the tree's resident memory (the sum of VmRSS of the service and every descendant), sampled every
 * 200 ms; per window the CPU of each thread of the service by its name (/proc/<pid>/task/<tid>/stat: the main
 * thread, chDB's pools, the PGlite worker, libuv's pool...; "node" sums node's own threads, "node#<tid>" the three
 * busiest of them).
 *
 *   npx tsx bench/footprint.bench.ts [--rates 10,40,200] [--seconds 10] [--rest 20] [--settle 5] [--projects 4]
 *     [--keys 200] [--env KEY=VALUE]... [--node-arg ARG]... [--label text] [--tsx]
 * `--rates ''` (or `--rates 0`) measures rest only. `--env` (repeatable) is passed to the service's environment,
 * e.g. `--env BUS_LINGER_MS=0` against `--env BUS_LINGER_MS=250`. Prints one JSON document on stdout (progress on
 * stderr). Linux only (/proc).
 */
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { readdir, readFile, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../test/e2e/support/console-service.ts';
import { numberArg } from './support/cli-args.ts';
import { machine } from './support/edge-bench.ts';
import { browserEventEnvelope } from './support/sentry-browser-event.ts';
import { keepAliveRequester } from './support/http-request.ts';

const argv = process.argv.slice(2);
const stringArg = (name: string): string | undefined => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? (argv[i + 1] ?? '') : undefined;
};
const RATES = (stringArg('rates') ?? '10,40,200')
  .split(',')
  .map((s) => Number(s.trim()))
  .filter((n) => Number.isFinite(n) && n > 0);
const SECONDS = numberArg('seconds', 10);
const REST = numberArg('rest', 20);
const SETTLE = numberArg('settle', 5);
const PROJECTS = numberArg('projects', 4);
const KEYS = numberArg('keys', 200);
const VISIBLE_WITHIN_MS = 10_000;
const TSX = argv.includes('--tsx');
/** Past this the bench stops waiting for the counts to add up (and says so). */
const GIVE_UP_MS = 60_000;
const LABEL = stringArg('label');
const EXTRA_ENV: Record<string, string> = {};
for (let i = 0; i < argv.length; i++) {
  if (argv[i] !== '--env') continue;
  const kv = argv[i + 1] ?? '';
  const eq = kv.indexOf('=');
  if (eq <= 0) throw new Error(`--env wants KEY=VALUE, got "${kv}"`);
  EXTRA_ENV[kv.slice(0, eq)] = kv.slice(eq + 1);
}
/** `--node-arg` (repeatable): passed to the service's node, e.g. `--node-arg --cpu-prof --node-arg --cpu-prof-dir=/tmp/prof`. */
const NODE_ARGS = argv.flatMap((a, i) => (a === '--node-arg' && argv[i + 1] ? [argv[i + 1]!] : []));
const OWNER = { email: 'bench@example.com', password: 'bench-password-footprint' };
const log = (m: string) => process.stderr.write(`[footprint] ${m}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** USER_HZ: Linux reports utime/stime in 1/100 s on every architecture node runs on. */
const TICKS_PER_S = 100;

const request = keepAliveRequester(64);

// ---- /proc: the process tree, its CPU and memory, the service's threads ----

/** Fields of /proc/<pid>/stat after the command (which may hold spaces and parentheses). */
async function statFields(file: string): Promise<{ comm: string; rest: string[] } | undefined> {
  const text = await readFile(file, 'utf8').catch(() => undefined);
  if (!text) return undefined;
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  return { comm: text.slice(open + 1, close), rest: text.slice(close + 2).split(' ') };
}

/** The root and every descendant alive now (by the parent pid of each process in /proc). */
async function treePids(root: number): Promise<number[]> {
  const children = new Map<number, number[]>();
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const s = await statFields(`/proc/${name}/stat`);
    if (!s) continue;
    const ppid = Number(s.rest[1]);
    const list = children.get(ppid) ?? [];
    list.push(Number(name));
    children.set(ppid, list);
  }
  const out: number[] = [];
  const queue = [root];
  while (queue.length) {
    const pid = queue.shift()!;
    out.push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return out;
}

/**
 * CPU seconds of the tree: utime + stime of each process alive, plus cutime + cstime (descendants that ended and
 * were waited for, counted once, by their parent). A descendant that ends between two readings and is not waited
 * for is lost; the service's descendants are long-lived (none in the embedded default at the time of writing).
 */
async function treeCpuSeconds(root: number): Promise<number> {
  let ticks = 0;
  for (const pid of await treePids(root)) {
    const s = await statFields(`/proc/${pid}/stat`);
    if (s) ticks += Number(s.rest[11]) + Number(s.rest[12]) + Number(s.rest[13]) + Number(s.rest[14]);
  }
  return ticks / TICKS_PER_S;
}

async function treeRssMb(root: number): Promise<number> {
  let kb = 0;
  for (const pid of await treePids(root)) {
    const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
    const m = /^VmRSS:\s+(\d+) kB/m.exec(status);
    if (m) kb += Number(m[1]);
  }
  return kb / 1024;
}

/** CPU ticks of each thread of one process, by thread id, with the thread's name. */
async function threadTicks(pid: number): Promise<Map<number, { comm: string; ticks: number }>> {
  const out = new Map<number, { comm: string; ticks: number }>();
  for (const tid of await readdir(`/proc/${pid}/task`).catch(() => [] as string[])) {
    const s = await statFields(`/proc/${pid}/task/${tid}/stat`);
    if (s) out.set(Number(tid), { comm: s.comm, ticks: Number(s.rest[11]) + Number(s.rest[12]) });
  }
  return out;
}

/** CPU seconds per thread name between two readings (the main thread as "main"); threads under 0.01 s left out. */
function threadBreakdown(
  pid: number,
  before: Map<number, { comm: string; ticks: number }>,
  after: Map<number, { comm: string; ticks: number }>,
): Record<string, number> {
  const byName = new Map<string, number>();
  for (const [tid, t] of after) {
    const d = t.ticks - (before.get(tid)?.ticks ?? 0);
    const name = tid === pid ? 'main' : t.comm;
    byName.set(name, (byName.get(name) ?? 0) + d);
  }
  // The service's own worker threads (the PGlite worker, V8's and libuv's) all say "node": the busiest ones by id.
  const busiest = [...after]
    .map(([tid, t]) => ({ tid, name: tid === pid ? 'main' : t.comm, d: t.ticks - (before.get(tid)?.ticks ?? 0) }))
    .filter((t) => t.d > 0 && t.name === 'node')
    .sort((a, b) => b.d - a.d)
    .slice(0, 3);
  for (const t of busiest) byName.set(`node#${t.tid}`, t.d);
  return Object.fromEntries(
    [...byName]
      .filter(([, d]) => d > 0)
      .sort((a, b) => b[1] - a[1])
      .map(([name, d]) => [name, +(d / TICKS_PER_S).toFixed(2)]),
  );
}

/** Peak resident memory of the tree, sampled every 200 ms; `reset` starts a new peak. */
function rssSampler(root: number) {
  let peak = 0;
  let overall = 0;
  let last = 0;
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      last = await treeRssMb(root).catch(() => last);
      peak = Math.max(peak, last);
      overall = Math.max(overall, last);
      await sleep(200);
    }
  })();
  return {
    reset: () => void (peak = last),
    peakMb: () => Math.round(peak),
    overallPeakMb: () => Math.round(overall),
    lastMb: () => Math.round(last),
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}

// ---- the load: one Sentry error event per envelope ----

/** One error event as @sentry/browser sends one (bench/support/sentry-browser-event.ts), its event id the n-th. */
const eventEnvelope = (n: number, url: string): string =>
  browserEventEnvelope({ id: (n + 1).toString(16).padStart(32, '0'), timestamp: Date.now() / 1000, url, sentAt: new Date().toISOString() });

interface Key {
  slug: string;
  origin: string;
  /** The envelope route's path and query for this key's DSN. */
  envelopePath: string;
}

async function main(): Promise<void> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'bench-footprint-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const serviceEnv = {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    OWNER_EMAIL: OWNER.email,
    OWNER_PASSWORD: OWNER.password,
    TRUST_PROXY: 'true',
    ...EXTRA_ENV,
  };
  // package.json's start script: the build, then the compiled service (or the source under tsx with --tsx).
  if (!TSX) await promisify(execFile)(process.execPath, ['service/build.mjs']);
  const startedAt = performance.now();
  // service/start.sh is npm start (the build just done finds nothing changed; it sets glibc's malloc thresholds and
  // execs node, so the child's pid is the service's). With --node-arg, node itself with those arguments.
  const [command, args] = TSX
    ? [process.execPath, [...NODE_ARGS, '--import', 'tsx', 'service/main.ts']]
    : NODE_ARGS.length
      ? [process.execPath, [...NODE_ARGS, '--enable-source-maps', 'dist/service/main.js']]
      : ['sh', ['service/start.sh']];
  const child = spawn(command, args, {
    env: serviceEnv,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const pid = child.pid!;
  const rss = rssSampler(pid);
  try {
    for (let i = 0; ; i++) {
      if (i > 900 || child.exitCode !== null) throw new Error('the service did not start');
      const ok = await request(base, 'GET', '/v1/', {}).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) break;
      await sleep(200);
    }
    const startSeconds = +((performance.now() - startedAt) / 1000).toFixed(1);
    const signIn = await request(base, 'POST', '/v1/auth/sign-in', { 'content-type': 'application/json' }, JSON.stringify(OWNER));
    if (signIn.status !== 200) throw new Error(`sign-in: ${signIn.status} ${signIn.body}`);
    const cookie = (signIn.headers['set-cookie'] ?? []).map((c) => c.split(';')[0]).join('; ');
    const session = { cookie, 'content-type': 'application/json', 'sec-fetch-site': 'same-origin' };
    const keys: Key[] = [];
    const slugs: string[] = [];
    for (let p = 0; p < PROJECTS; p++) {
      const slug = `footprint-${p}`;
      const domain = `shop-${p}.example.com`;
      const created = await request(
        base,
        'POST',
        '/v1/projects',
        session,
        JSON.stringify({ name: slug, slug, environmentHosts: { production: [domain], preview: [] } }),
      );
      if (created.status !== 201) throw new Error(`project: ${created.status} ${created.body}`);
      slugs.push(slug);
      for (let k = 0; k < Math.ceil(KEYS / PROJECTS); k++) {
        const r = await request(base, 'POST', `/v1/projects/${slug}/keys`, session, JSON.stringify({ kind: 'ingest', name: `k${k}` }));
        if (r.status !== 201) throw new Error(`key: ${r.status} ${r.body}`);
        const dsn = new URL(JSON.parse(r.body).key.dsn as string);
        keys.push({
          slug,
          origin: `https://${domain}`,
          envelopePath: `/api/${dsn.pathname.replace(/^.*\//, '')}/envelope/?sentry_key=${dsn.username}&sentry_version=7&sentry_client=sentry.javascript.browser%2F11.12.0`,
        });
      }
    }
    let sent = 0;
    let accepted = 0;
    const statuses: Record<number, number> = {};
    const send = async (n: number, key = keys[n % keys.length]!): Promise<void> => {
      const k = key;
      const r = await request(
        base,
        'POST',
        k.envelopePath,
        {
          'content-type': 'text/plain;charset=UTF-8',
          origin: k.origin,
          'x-forwarded-for': `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`,
        },
        eventEnvelope(n, `${k.origin}/dashboard/${n % 50}`),
      ).catch(() => ({ status: 0 }));
      statuses[r.status] = (statuses[r.status] ?? 0) + 1;
      if (r.status === 200 || r.status === 202) accepted++;
    };
    log(`started in ${startSeconds} s; ${slugs.length} projects, ${keys.length} ingest keys; waiting for the edge to know them`);
    // The edge learns new keys from its settings cache: wait until the last key is taken (this event is counted).
    for (let i = 0; ; i++) {
      if (i > 300) throw new Error('the edge never took the new keys');
      const before = accepted;
      await send(1_000_000_000 + i, keys[keys.length - 1]);
      if (accepted > before) break;
      await sleep(200);
    }

    /** The issues' counts (every project's) added up. */
    const visibleCount = async (): Promise<number> => {
      let counted = 0;
      for (const slug of slugs) {
        const r = await request(base, 'GET', `/v1/projects/${slug}/errors?status=unresolved&limit=100`, { cookie });
        if (r.status !== 200) continue;
        for (const issue of JSON.parse(r.body).data as Array<{ count: number }>) counted += issue.count;
      }
      return counted;
    };
    /** Polls (every 250 ms) until every accepted event is counted; ms from `since`, or NaN past GIVE_UP_MS. */
    const untilVisible = async (since: number): Promise<{ ms: number; counted: number }> => {
      let counted = 0;
      for (;;) {
        counted = await visibleCount();
        if (counted >= accepted) return { ms: Math.round(performance.now() - since), counted };
        if (performance.now() - since > GIVE_UP_MS) return { ms: Number.NaN, counted };
        await sleep(250);
      }
    };
    const first = await untilVisible(performance.now());
    log(`first event visible (${first.counted}); settling ${SETTLE} s`);
    await sleep(SETTLE * 1000);

    // ---- at rest ----
    log(`at rest for ${REST} s`);
    rss.reset();
    const restThreads0 = await threadTicks(pid);
    const restCpu0 = await treeCpuSeconds(pid);
    const restT0 = performance.now();
    await sleep(REST * 1000);
    const restCpu = (await treeCpuSeconds(pid)) - restCpu0;
    const restWall = (performance.now() - restT0) / 1000;
    const rest = {
      seconds: +restWall.toFixed(1),
      cpuSeconds: +restCpu.toFixed(2),
      cores: +(restCpu / restWall).toFixed(4),
      peakRssMb: rss.peakMb(),
      threadsCpuSeconds: threadBreakdown(pid, restThreads0, await threadTicks(pid)),
    };
    log(`at rest: ${rest.cores} core, ${rest.peakRssMb} MB`);

    // ---- steady rates ----
    const windows = [];
    for (const rate of RATES) {
      const total = Math.max(1, Math.round(rate * SECONDS));
      const acceptedBefore = accepted;
      const statusesBefore = { ...statuses };
      log(`${rate} events/s for ${SECONDS} s (${total} envelopes)`);
      rss.reset();
      const threads0 = await threadTicks(pid);
      const cpu0 = await treeCpuSeconds(pid);
      const t0 = performance.now();
      const pending: Array<Promise<void>> = [];
      for (let i = 0; i < total; i++) {
        const due = t0 + (i * 1000) / rate;
        const wait = due - performance.now();
        if (wait > 1) await sleep(wait);
        pending.push(send(sent++));
      }
      // The window is the offered period (one interval past the last send), whatever the answers' latency.
      const windowEnd = t0 + (total * 1000) / rate;
      if (windowEnd > performance.now()) await sleep(windowEnd - performance.now());
      const cpuWindow = (await treeCpuSeconds(pid)) - cpu0;
      const threads1 = await threadTicks(pid);
      const wall = (performance.now() - t0) / 1000;
      await Promise.all(pending);
      const visible = await untilVisible(windowEnd);
      const cpuDrain = (await treeCpuSeconds(pid)) - cpu0;
      const events = accepted - acceptedBefore;
      const windowStatuses = Object.fromEntries(
        Object.entries(statuses)
          .map(([s, n]) => [s, n - (statusesBefore[Number(s)] ?? 0)])
          .filter(([, n]) => (n as number) > 0),
      );
      const result = {
        rateEventsPerS: rate,
        offeredEventsPerS: +(total / wall).toFixed(1),
        sent: total,
        accepted: events,
        statuses: windowStatuses,
        cpuSecondsWindow: +cpuWindow.toFixed(2),
        cores: +(cpuWindow / wall).toFixed(3),
        cpuMsPerEvent: events ? +((cpuWindow * 1000) / events).toFixed(2) : null,
        /** CPU from the window's start until every event was visible (includes the API's polling by this bench). */
        cpuMsPerEventWithDrain: events ? +((cpuDrain * 1000) / events).toFixed(2) : null,
        peakRssMb: rss.peakMb(),
        allVisibleAfterMs: visible.ms,
        allVisibleWithin10s: visible.ms <= VISIBLE_WITHIN_MS,
        counted: visible.counted,
        acceptedSoFar: accepted,
        threadsCpuSecondsWindow: threadBreakdown(pid, threads0, threads1),
      };
      log(`${rate}/s: ${result.cpuMsPerEvent} ms/event, ${result.cores} core, ${result.peakRssMb} MB, visible after ${visible.ms} ms`);
      windows.push(result);
    }
    process.stdout.write(
      `${JSON.stringify(
        {
          bench: 'footprint',
          label: LABEL,
          date: new Date().toISOString(),
          machine: machine(),
          command: TSX
            ? 'node --import tsx service/main.ts (npm start before issue 44)'
            : NODE_ARGS.length
              ? `node ${NODE_ARGS.join(' ')} --enable-source-maps dist/service/main.js`
              : 'sh service/start.sh (npm start)',
          env: EXTRA_ENV,
          settings: { rates: RATES, seconds: SECONDS, restSeconds: REST, settleSeconds: SETTLE, projects: slugs.length, keys: keys.length },
          startSeconds,
          rest,
          windows,
          peakRssMbOverall: rss.overallPeakMb(),
          processes: await Promise.all(
            (await treePids(pid)).map(async (p) => ({
              pid: p,
              comm: (await statFields(`/proc/${p}/stat`))?.comm,
              rssMb: Math.round(Number(/^VmRSS:\s+(\d+) kB/m.exec(await readFile(`/proc/${p}/status`, 'utf8').catch(() => ''))?.[1] ?? 0) / 1024),
            })),
          ),
        },
        null,
        2,
      )}\n`,
    );
  } finally {
    await rss.stop();
    child.kill('SIGTERM');
    if (child.exitCode === null) await new Promise((r) => child.once('exit', r));
    request.destroy();
    await rm(dataDir, { recursive: true, force: true });
  }
}

await main();
