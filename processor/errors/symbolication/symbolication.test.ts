import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { Platform } from '../../../platform/platform.ts';
import { sourceMapsRepository } from '../../../domain/source-maps/source-maps-repository.ts';
import type { SymbolicatedFrame } from '../../../schemas/symbolicated-frame.ts';
import { stampErrorEvent, type StampedErrorBatch } from '../../../schemas/error-event.ts';
import { LIMITS } from '../../../schemas/limits.ts';
import { buildTestApi, createProject, signUpAndSignIn } from '../../../test/support/accounts.ts';
import { inertMailer } from '../../../test/support/stubs.ts';
import { createErrorPipeline, type ErrorPipeline } from '../error-pipeline.ts';
import { ParsedMaps } from './parsed-maps.ts';
import { buildApp, stackOf, type BuiltApp } from './symbolication-fixture.ts';

/**
 * Symbolication in the error pipeline (issue 37) over a real esbuild bundle: minified, content-hashed, with its map.
 * Maps are stored as the builder and the upload routes store them (sourceMapsRepository); events go through the whole
 * pipeline, and the groups and samples are read back.
 */
const SITES = 'sites.test';
let api: { app: FastifyInstance; platform: Platform; close(): Promise<void> };
let cookie: string;
const apps: BuiltApp[] = [];

beforeAll(async () => {
  api = await buildTestApi({ overrides: { mailer: inertMailer } });
  cookie = (await signUpAndSignIn(api.app, api.platform)).cookie;
});
afterAll(async () => {
  await Promise.all(apps.map((a) => a.close()));
  await api?.close();
});

async function app(variant: string, opts: { debugId?: string } = {}) {
  const a = await buildApp(variant, opts);
  apps.push(a);
  return a;
}

async function project() {
  return createProject(api.app, cookie, { environmentHosts: { production: ['shop.example.com'], preview: [] } });
}

async function deploy(projectId: string, a: BuiltApp, opts: { live?: boolean; content?: Buffer } = {}) {
  const id = `dep_${randomUUID().replace(/-/g, '')}`;
  await api.platform.db.query(
    `INSERT INTO deploys (id, project_id, branch, environment, status, artifact_dir, finished_at) VALUES ($1, $2, 'main', 'production', 'ready', $3, now())`,
    [id, projectId, `artifacts/${id}`],
  );
  if (opts.live) await api.platform.db.query('UPDATE projects SET live_deploy_id = $1 WHERE id = $2', [id, projectId]);
  await sourceMapsRepository.insert(api.platform.db, { projectId, deployId: id }, [
    { mapName: a.mapName, servedPath: a.servedPath, content: opts.content ?? a.map },
  ]);
  return id;
}

function pipeline(opts: { coldBytesPerBatch?: number; maps?: ParsedMaps } = {}): ErrorPipeline {
  return createErrorPipeline({
    db: api.platform.db,
    analytics: api.platform.analytics,
    mailer: inertMailer,
    clock: api.platform.clock,
    logger: api.platform.logger,
    publicBaseUrl: 'http://localhost',
    sitesDomain: SITES,
    parsedMaps: opts.maps ?? new ParsedMaps(LIMITS.sourceMaps.cacheBytes),
    ...(opts.coldBytesPerBatch !== undefined ? { coldBytesPerBatch: opts.coldBytesPerBatch } : {}),
  });
}

/** Resolved frames only (the test runner's own frames below the app's are no URL). */
const resolvedFrames = (frames: unknown) => (frames as SymbolicatedFrame[]).filter((f) => f.resolution.status === 'resolved');

function batch(
  projectId: string,
  events: Array<{ name: string; message: string; stack: string; deployId?: string; debugIds?: Record<string, string> }>,
): StampedErrorBatch {
  return {
    projectId,
    originHost: 'shop.example.com',
    receivedAt: Date.now(),
    events: events.map((e) => stampErrorEvent({ ...e }, `evt_${randomUUID()}`, 'browser')),
  };
}

async function sampleOf(
  projectId: string,
): Promise<{ group: { id: string; stack: string; culprit: string; count: number }; sample: Record<string, unknown> }[]> {
  const r = await api.platform.db.query<{ id: string; stack: string; culprit: string; count: number; samples: Array<Record<string, unknown>> }>(
    `SELECT g.id, g.stack, g.culprit, g.count, s.samples FROM error_groups g JOIN error_group_samples s ON s.group_id = g.id WHERE g.project_id = $1 ORDER BY g.first_seen, s.seq DESC`,
    [projectId],
  );
  // A group's newest slot, whose first sample is its newest.
  const seen = new Set<string>();
  return r.rows
    .filter((row) => !seen.has(row.id) && seen.add(row.id))
    .map((row) => ({ group: { id: row.id, stack: row.stack, culprit: row.culprit, count: Number(row.count) }, sample: row.samples[0]! }));
}

describe('symbolication', () => {
  it('resolves a minified bundle to its source, and two deploys with new hashes stay one issue', async () => {
    const p = await project();
    const first = await app('one');
    const second = await app('two');
    expect(first.servedPath).not.toBe(second.servedPath);
    const d1 = await deploy(p.id, first);
    const d2 = await deploy(p.id, second, { live: true });
    const pl = pipeline();
    // A page loaded before the second deploy still runs the first deploy's file: it resolves against that deploy.
    const old = stackOf(first, `https://${p.slug}.${SITES}${first.servedPath}`);
    const fresh = stackOf(second, `https://shop.example.com${second.servedPath}`);
    const summary = await pl.handleBatch([batch(p.id, [old, old])]);
    const later = await pl.handleBatch([batch(p.id, [fresh])]);
    expect(summary.accepted + later.accepted).toBe(3);
    expect(summary.counted?.resolved).toBeGreaterThanOrEqual(6);

    const groups = await sampleOf(p.id);
    expect(groups).toHaveLength(1);
    const { group } = groups[0]!;
    expect(group.count).toBe(3);
    expect(group.stack).toContain('at sumPrices (src/cart.ts:10:13)');
    expect(group.stack).toContain('at formatTotal (src/cart.ts:2:17)');
    expect(group.stack).not.toContain('main-');
    expect(group.culprit).toBe('sumPrices (src/cart.ts:10:13)');
    const r = await api.platform.db.query<{ samples: Array<{ minifiedStack?: string; frames?: SymbolicatedFrame[] }> }>(
      'SELECT s.samples FROM error_group_samples s WHERE s.group_id = $1 ORDER BY s.seq DESC',
      [group.id],
    );
    // The frames travel with each batch's newest sample of the group only.
    const samples = r.rows.flatMap((row) => row.samples);
    expect(samples.map((smp) => smp.frames !== undefined)).toEqual([true, true, false]);
    const sample = samples[0]!;
    expect(sample.minifiedStack).toMatch(/main-[A-Z0-9]{8}\.js:1:\d+/);
    const top = sample.frames![0]!;
    expect(top.original).toEqual({ fn: 'sumPrices', file: 'src/cart.ts', line: 10, col: 13 });
    expect(top.inApp).toBe(true);
    // Each event's frames resolved against the deploy that served its file: the older file on the production host by
    // its path (the live deploy has no such file), the live deploy's own by deploy.
    const used = samples
      .filter((smp) => smp.frames)
      .map((smp) => [
        smp.minifiedStack!.includes(first.servedPath),
        new Set(resolvedFrames(smp.frames).map((f) => `${(f.resolution as { deployId: string }).deployId} ${(f.resolution as { match: string }).match}`)),
      ]);
    expect(used).toEqual([
      [false, new Set([`${d2} deploy`])],
      [true, new Set([`${d1} path`])],
    ]);
    // Occurrence rows keep the stack as sent and the frames, without context lines.
    const occurrences = await api.platform.analytics.query<{ frames: string; minified_stack: string }>(
      'SELECT frames, minified_stack FROM error_occurrences WHERE project_id = {p:String}',
      { p: p.id },
    );
    expect(occurrences).toHaveLength(3);
    for (const o of occurrences) {
      expect(o.minified_stack).toMatch(/main-[A-Z0-9]{8}\.js:1:\d+/);
      const frames = JSON.parse(o.frames) as SymbolicatedFrame[];
      expect(frames[0]!.original).toMatchObject({ file: 'src/cart.ts', fn: 'sumPrices' });
      expect(frames.some((f) => f.context)).toBe(false);
    }
    expect(top.context).toMatchObject({ firstLine: 5, errorIndex: 5 });
    expect(top.context!.lines[top.context!.errorIndex]).toContain("throw new RangeError('negative price ' + price);");
    expect(top.context!.lines).toHaveLength(11);
  });

  it('picks the deploy a per-deploy host names, and the live one for the production host, when a path is in several', async () => {
    const p = await project();
    const a = await app('alpha');
    const b = await app('beta');
    // Same served path, two builds: a name without a hash (bundle.js) is served by every deploy.
    const same = { ...b, servedPath: a.servedPath };
    const dA = await deploy(p.id, a);
    const dB = await deploy(p.id, same, { content: b.map, live: true });
    const pl = pipeline();
    const viaDeployHost = stackOf(a, `https://${dA.replace(/_/g, '-')}.${SITES}${a.servedPath}`);
    const viaProduction = stackOf(b, `https://shop.example.com${a.servedPath}`);
    await pl.handleBatch([batch(p.id, [viaDeployHost])]);
    await pl.handleBatch([batch(p.id, [viaProduction])]);
    const r = await api.platform.db.query<{ samples: Array<{ frames: SymbolicatedFrame[] }> }>(
      'SELECT s.samples FROM error_group_samples s JOIN error_groups g ON g.id = s.group_id WHERE g.project_id = $1',
      [p.id],
    );
    const resolved = r.rows.flatMap((row) => row.samples).flatMap((smp) => resolvedFrames(smp.frames));
    expect(new Set(resolved.map((f) => (f.resolution as { deployId?: string }).deployId))).toEqual(new Set([dA, dB]));
    for (const f of resolved) expect(f.resolution).toMatchObject({ status: 'resolved', match: 'deploy' });
  });

  it("resolves by the event's debug id with no deploy (an upload), and never with another project's maps", async () => {
    const p = await project();
    const other = await project();
    const debugId = randomUUID();
    const a = await app('uploaded', { debugId });
    await sourceMapsRepository.insert(api.platform.db, { projectId: p.id, bundleId: 'bundle-1' }, [{ mapName: a.mapName, debugId, content: a.map }]);
    const url = `https://cdn.example.net${a.servedPath}`;
    const pl = pipeline();
    await pl.handleBatch([batch(p.id, [{ ...stackOf(a, url), debugIds: { [url]: debugId } }])]);
    const [{ sample }] = (await sampleOf(p.id)) as unknown as [{ sample: Record<string, unknown> }];
    expect((sample.frames as SymbolicatedFrame[])[0]).toMatchObject({
      original: { file: 'src/cart.ts', fn: 'sumPrices' },
      resolution: { status: 'resolved', match: 'debug_id', deployId: null, bundleId: 'bundle-1', debugId },
    });

    // The other project names the same debug id and path: it is not resolved with the first project's map.
    await pl.handleBatch([batch(other.id, [{ ...stackOf(a, url), debugIds: { [url]: debugId } }])]);
    const [{ group, sample: s2 }] = (await sampleOf(other.id)) as unknown as [{ group: { stack: string }; sample: Record<string, unknown> }];
    expect(group.stack).toContain(a.servedPath);
    expect(s2.frames).toBeUndefined();
  });

  it('keeps frames minified with a reason: no map, a map that does not read, a batch past its parse budget', async () => {
    const p = await project();
    const a = await app('reasons');
    const pl = pipeline();
    const summary = await pl.handleBatch([batch(p.id, [stackOf(a, `https://shop.example.com${a.servedPath}`)])]);
    expect(summary.counted).toMatchObject({ unresolved_no_map: 1 });

    const busy = await project();
    await deploy(busy.id, a);
    const poor = pipeline({ coldBytesPerBatch: 10 });
    const s2 = await poor.handleBatch([batch(busy.id, [stackOf(a, `https://shop.example.com${a.servedPath}`)])]);
    expect(s2.counted).toMatchObject({ unresolved_busy: 3 });
    const [{ sample }] = (await sampleOf(busy.id)) as unknown as [{ sample: Record<string, unknown> }];
    expect((sample.frames as SymbolicatedFrame[])[0]!.resolution).toEqual({ status: 'unresolved', reason: 'busy' });
    expect(sample.minifiedStack).toBeUndefined();
  });
});

describe('hostile maps', () => {
  const cases: Array<[string, (map: Record<string, unknown>) => unknown, string]> = [
    ['invalid JSON', () => '{"version":3,"mappings":', 'map_refused_map_invalid_json'],
    ['not version 3', (m) => ({ ...m, version: 2 }), 'map_refused_not_a_source_map'],
    ['invalid VLQ in mappings', (m) => ({ ...m, mappings: '!!!!,@@@@;' + '\u0000'.repeat(10) }), 'map_refused_map_invalid_mappings'],
    [
      'index maps nested past the bound',
      (m) => {
        let map: Record<string, unknown> = m;
        for (let i = 0; i < 40; i++) map = { version: 3, sections: [{ offset: { line: 0, column: 0 }, map }] };
        return map;
      },
      'map_refused_map_sections_too_deep',
    ],
    [
      'too many sections',
      (m) => ({ version: 3, sections: Array.from({ length: LIMITS.sourceMaps.sections + 1 }, () => ({ offset: { line: 0, column: 0 }, map: m })) }),
      'map_refused_map_too_many_sections',
    ],
    ['sources that are not strings', (m) => ({ ...m, sources: [{ a: 1 }, [2]] }), 'map_refused_not_a_source_map'],
    ['names that are not strings', (m) => ({ ...m, names: [{ toString: 1 }] }), 'map_refused_not_a_source_map'],
    [
      'a JSON nesting bomb beside the mappings',
      (m) => `{"version":3,"sources":${JSON.stringify(m.sources)},"mappings":${JSON.stringify(m.mappings)},"x":${'['.repeat(200_000)}${']'.repeat(200_000)}}`,
      'resolved_without_context',
    ],
    ['mappings that point past every source', (m) => ({ ...m, sources: [] }), 'line_out_of_range'],
  ];

  for (const [what, make, expected] of cases) {
    it(`${what}: never a crash, the frame stays minified, counted`, async () => {
      const p = await project();
      const a = await app(`hostile ${what}`);
      const made = make(JSON.parse(a.map.toString()));
      const content = Buffer.from(typeof made === 'string' ? made : JSON.stringify(made));
      await deploy(p.id, a, { content });
      const summary = await pipeline().handleBatch([batch(p.id, [stackOf(a, `https://shop.example.com${a.servedPath}`)])]);
      expect(summary.accepted).toBe(1);
      const counted = summary.counted ?? {};
      if (expected === 'resolved_without_context') expect(counted.resolved).toBe(3);
      else if (expected === 'line_out_of_range') expect(counted.unresolved_line_out_of_range).toBe(3);
      else {
        expect(counted[expected]).toBe(1);
        expect(counted.unresolved_map_refused).toBe(3);
      }
    });
  }

  it('a map past the size bound is refused unparsed', async () => {
    const p = await project();
    const a = await app('huge');
    const huge = JSON.parse(a.map.toString());
    huge.sourcesContent = ['x'.repeat(LIMITS.sourceMaps.mapBytes)];
    await deploy(p.id, a, { content: Buffer.from(JSON.stringify(huge)) });
    const summary = await pipeline().handleBatch([batch(p.id, [stackOf(a, `https://shop.example.com${a.servedPath}`)])]);
    expect(summary.counted).toMatchObject({ map_refused_map_too_large: 1, unresolved_map_refused: 3 });
  });

  it('a refused map is parsed once per process, not once per batch', async () => {
    const p = await project();
    const a = await app('refused once');
    await deploy(p.id, a, { content: Buffer.from('not json') });
    const pl = pipeline();
    const stack = stackOf(a, `https://shop.example.com${a.servedPath}`);
    const first = await pl.handleBatch([batch(p.id, [stack])]);
    const second = await pl.handleBatch([batch(p.id, [stack])]);
    expect(first.counted?.map_refused_map_invalid_json).toBe(1);
    expect(second.counted?.map_refused_map_invalid_json).toBeUndefined();
    expect(second.counted?.unresolved_map_refused).toBe(3);
  });

  it('secrets in context lines are scrubbed like the rest of the event', async () => {
    const p = await project();
    const a = await app('secret');
    const map = JSON.parse(a.map.toString());
    const cart = map.sources.findIndex((s: string) => s.endsWith('cart.ts'));
    map.sourcesContent[cart] = map.sourcesContent[cart].replace('// The bug: a refund line is not a price.', "const key = 'sk_live_4eC39HqLyjWDarjtT1zdp7dc';");
    await deploy(p.id, a, { content: Buffer.from(JSON.stringify(map)) });
    await pipeline().handleBatch([batch(p.id, [stackOf(a, `https://shop.example.com${a.servedPath}`)])]);
    const [{ sample }] = (await sampleOf(p.id)) as unknown as [{ sample: Record<string, unknown> }];
    const lines = (sample.frames as SymbolicatedFrame[])[0]!.context!.lines.join('\n');
    expect(lines).not.toContain('sk_live_4eC39HqLyjWDarjtT1zdp7dc');
    expect(lines).toContain('negative price');
  });
});
