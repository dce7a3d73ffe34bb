/**
 * Symbolication's cost in the error processor (issue 37), in one sitting, rounds alternating:
 *
 * - `none`: the events' frames are no URLs (a Node service's paths): the symbolication step costs no query;
 * - `no_maps`: the same browser stacks as below, in projects with no kept maps (one candidates query per batch);
 * - `warm`: browser stacks of 5 frames into a ~2 MB map kept by each project's deploy, already parsed (warm cache);
 *   the same error thrown again and again, as errors come (its stack is resolved once, then remembered);
 * - `warm_unique`: the same, but every event's top frame at another column: no stack is seen twice, so every frame is
 *   resolved (the worst case: the parsed map is warm, the stack memo never hits).
 *
 * Each is the whole `handleBatch` on Postgres (scrub, symbolicate, fingerprint, environment, caps, groups, ledger,
 * occurrence rows encoded and dropped) over batches of 400 events. Also: the cold parse of a ~10 MB map (parse, check
 * and first lookup) and the heap it holds, which is what ParsedMaps' COST_PER_BYTE stands for.
 *
 *   npx tsx --expose-gc bench/symbolication.bench.ts [--batches 20] [--rounds 3]
 *
 * Prints JSON.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import vm from 'node:vm';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { createPgStore } from '../platform/adapters/relational/pg-store.ts';
import { migrateRelational } from '../platform/migrate.ts';
import { systemClock } from '../platform/clock.ts';
import { createLogger } from '../platform/logger.ts';
import { sourceMapsRepository } from '../domain/source-maps/source-maps-repository.ts';
import { createErrorPipeline } from '../processor/errors/error-pipeline.ts';
import { ParsedMaps, parseMap, originalPosition } from '../processor/errors/symbolication/parsed-maps.ts';
import { stampErrorEvent, type StampedErrorBatch } from '../schemas/error-event.ts';
import { LIMITS } from '../schemas/limits.ts';
import { inertMailer } from '../test/support/stubs.ts';
import { bundleApp } from '../processor/errors/symbolication/symbolication-fixture.ts';
import { insertBenchProject, insertBenchUser, droppingAnalytics } from './support/error-load.ts';
import { numberArg } from './support/cli-args.ts';

const BATCHES = numberArg('batches', 20);
const ROUNDS = numberArg('rounds', 3);
const EVENTS_PER_BATCH = 400;
const PROJECTS = 20;
const SERVER = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432';
const DB = `bench_symbolication_${process.pid}`;
const log = (m: string) => process.stderr.write(`[bench] ${m}\n`);

/** An app of `modules` modules whose entry throws through a chain of 5 functions; bundled minified with its map. */
async function bigApp(modules: number, fillerLines: number) {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-symbolication-'));
  await mkdir(path.join(dir, 'src'), { recursive: true });
  const filler = (i: number) =>
    Array.from({ length: fillerLines }, (_, k) => `  // module ${i}, line ${k}: the kind of comment a real codebase carries around its logic.`).join('\n');
  for (let i = 0; i < modules; i++) {
    await writeFile(
      path.join(dir, `src/m${i}.ts`),
      `${filler(i)}\nexport function compute${i}(values: number[]): number {\n  let acc = ${i};\n  for (const v of values) acc = (acc * 31 + v) % 1000003;\n  return acc;\n}\nexport function describe${i}(n: number): string {\n  return 'module ${i}: ' + n.toFixed(2);\n}\n`,
    );
  }
  await writeFile(
    path.join(dir, 'src/chain.ts'),
    `export function loadCart(id: string) { return parseCart(id); }
export function parseCart(id: string) { return validateCart(id.split(',')); }
export function validateCart(items: string[]) { return priceCart(items.map(Number)); }
export function priceCart(prices: number[]) { return checkPrices(prices); }
export function checkPrices(prices: number[]): number {
  for (const p of prices) if (p < 0) throw new RangeError('negative price ' + p);
  return prices.length;
}
`,
  );
  const imports = Array.from({ length: modules }, (_, i) => `import * as m${i} from './m${i}';`).join('\n');
  await writeFile(
    path.join(dir, 'src/main.ts'),
    `${imports}\nimport { loadCart } from './chain';\n(globalThis as any).modules = [${Array.from({ length: modules }, (_, i) => `m${i}`).join(', ')}];\n(globalThis as any).loadCart = loadCart;\n`,
  );
  const { js, map, jsName } = await bundleApp(dir);
  await rm(dir, { recursive: true, force: true });
  return { js, map, servedPath: `/assets/${jsName}` };
}

function thrownStack(js: string, url: string): string {
  const context: Record<string, unknown> = {};
  context.globalThis = context;
  vm.runInNewContext(js, context, { filename: url });
  try {
    (context.loadCart as (id: string) => unknown)('1,2,-3');
  } catch (err) {
    // Only the app's frames: the bench's own would be no URL.
    return (err as Error).stack!.split('\n').slice(0, 6).join('\n');
  }
  throw new Error('no throw');
}

const heapUsed = () => {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().heapUsed;
};

// Cold parse of a ~10 MB map.
log('building a ~10 MB map');
const large = await bigApp(2_400, 40);
const heap0 = heapUsed();
const t0 = performance.now();
const parsedLarge = parseMap(large.map);
if (parsedLarge.kind !== 'ok') throw new Error(`large map refused: ${parsedLarge.reason}`);
originalPosition(parsedLarge, 1, 100);
const coldParseMs = performance.now() - t0;
const heapPerMapByte = (heapUsed() - heap0) / large.map.length;
const coldParse = { mapBytes: large.map.length, coldParseMs: Math.round(coldParseMs), heapBytesPerMapByte: Number(heapPerMapByte.toFixed(2)) };
log(`cold parse: ${JSON.stringify(coldParse)}`);

log('building a ~2 MB map');
const app = await bigApp(480, 40);
log(`map: ${app.map.length} bytes`);

const admin = new pg.Client(`${SERVER}/postgres`);
await admin.connect();
await admin.query(`CREATE DATABASE ${DB}`);
const db = await createPgStore(`${SERVER}/${DB}`);
try {
  await migrateRelational(db);
  const userId = await insertBenchUser(db);
  const withMaps: string[] = [];
  const withoutMaps: string[] = [];
  for (let i = 0; i < PROJECTS; i++) {
    const p = (await insertBenchProject(db, userId, 'sym')).id;
    const deployId = `dep_${randomUUID().replace(/-/g, '')}`;
    await db.query(
      `INSERT INTO deploys (id, project_id, branch, environment, status, artifact_dir, finished_at) VALUES ($1, $2, 'main', 'production', 'ready', $3, now())`,
      [deployId, p, `artifacts/${deployId}`],
    );
    await db.query('UPDATE projects SET live_deploy_id = $1 WHERE id = $2', [deployId, p]);
    await sourceMapsRepository.insert(db, { projectId: p, deployId }, [
      { mapName: `assets${app.servedPath}.map`, servedPath: app.servedPath, content: app.map },
    ]);
    withMaps.push(p);
    withoutMaps.push((await insertBenchProject(db, userId, 'nomap')).id);
  }
  const browserStack = thrownStack(app.js, `https://shop.example.com${app.servedPath}`);
  const nodeStack = browserStack.replaceAll(`https://shop.example.com${app.servedPath}`, '/srv/app/dist/server.js');
  log(`stack:\n${browserStack}`);

  // Occurrence rows encoded as the adapters do (JSONCompactEachRow), then dropped.
  const analytics = droppingAnalytics();
  const pipeline = createErrorPipeline({
    db,
    analytics,
    mailer: inertMailer,
    clock: systemClock,
    logger: createLogger('error', 'bench'),
    publicBaseUrl: 'http://localhost:8080',
    parsedMaps: new ParsedMaps(LIMITS.sourceMaps.cacheBytes),
  });

  type Mode = 'none' | 'no_maps' | 'warm' | 'warm_unique';
  let unique = 0;
  const batchOf = (mode: Mode): StampedErrorBatch[] => {
    const projects = mode === 'warm' || mode === 'warm_unique' ? withMaps : withoutMaps;
    const stackOf = (): string => {
      if (mode === 'none') return nodeStack;
      if (mode !== 'warm_unique') return browserStack;
      // Another column of the same minified line for the top frame: another position in the map, a stack never seen.
      const n = unique++;
      return browserStack.replace(/:(\d+)\)/, (_m, col: string) => `:${Number(col) + (n % 5_000)})`);
    };
    return projects.map((projectId) => ({
      projectId,
      originHost: mode === 'none' ? null : 'shop.example.com',
      receivedAt: Date.now(),
      events: Array.from({ length: EVENTS_PER_BATCH / PROJECTS }, (_, i) =>
        stampErrorEvent({ name: 'RangeError', message: `negative price -${i}`, stack: stackOf() }, randomUUID(), mode === 'none' ? 'node' : 'browser'),
      ),
    }));
  };

  const measure = async (mode: Mode) => {
    const batches = Array.from({ length: BATCHES }, () => batchOf(mode));
    const cpu0 = process.cpuUsage();
    const t = performance.now();
    let events = 0;
    let resolved = 0;
    for (const b of batches) {
      const s = await pipeline.handleBatch(b);
      events += s.accepted;
      resolved += s.counted?.resolved ?? 0;
    }
    const cpu = process.cpuUsage(cpu0);
    const wallMs = performance.now() - t;
    return {
      events,
      resolvedFrames: resolved,
      eventsPerSecond: Math.round(events / (wallMs / 1000)),
      cpuUsPerEvent: Number(((cpu.user + cpu.system) / events).toFixed(1)),
    };
  };

  // Warm up: the groups exist and each project's map is parsed.
  for (const mode of ['none', 'no_maps', 'warm', 'warm_unique'] as const) await pipeline.handleBatch(batchOf(mode));
  const rounds: Array<Record<Mode, Awaited<ReturnType<typeof measure>>>> = [];
  for (let r = 0; r < ROUNDS; r++) {
    // BENCH_MODES=warm (a comma list): only those modes, say under a profiler.
    const only = process.env.BENCH_MODES?.split(',');
    const order = (r % 2 ? (['warm_unique', 'warm', 'no_maps', 'none'] as Mode[]) : (['none', 'no_maps', 'warm', 'warm_unique'] as Mode[])).filter(
      (m) => !only || only.includes(m),
    );
    const round = {} as Record<Mode, Awaited<ReturnType<typeof measure>>>;
    for (const mode of order) round[mode] = await measure(mode);
    log(`round ${r + 1}: ${JSON.stringify(round)}`);
    rounds.push(round);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const rate = (mode: Mode) => (rounds[0]![mode] ? median(rounds.map((r) => r[mode].eventsPerSecond)) : null);
  console.log(
    JSON.stringify(
      {
        bench: 'symbolication',
        machine: {
          nproc: os.cpus().length,
          cpu: os.cpus()[0]?.model.trim(),
          node: process.version,
          loadAverage: os.loadavg().map((x) => Number(x.toFixed(2))),
        },
        mapBytes: app.map.length,
        framesPerEvent: 5,
        eventsPerBatch: EVENTS_PER_BATCH,
        medianEventsPerSecond: { none: rate('none'), no_maps: rate('no_maps'), warm: rate('warm'), warm_unique: rate('warm_unique') },
        warmOverNone: rate('warm') && rate('none') ? Number((rate('warm')! / rate('none')!).toFixed(2)) : null,
        warmUniqueOverNone: rate('warm_unique') && rate('none') ? Number((rate('warm_unique')! / rate('none')!).toFixed(2)) : null,
        coldParse,
        rounds,
      },
      null,
      2,
    ),
  );
} finally {
  await db.close();
  await admin.query(`DROP DATABASE IF EXISTS ${DB}`);
  await admin.end();
}
