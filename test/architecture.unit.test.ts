import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The layering of ../shared/ARCHITECTURE.md, checked on the source. Floors, bottom up:
 *   schemas/   the wire contract (HTTP shapes in schemas/api, bus messages in schemas/bus, limits, codes): imports nothing of ours
 *   platform/  ports, adapters, config, logging, clock, migrations: imports schemas
 *   domain/    the business rules roles share (host patterns, the scrubber, flag evaluation, usage months, alert
 *              recipients, the project-event publisher): imports schemas and platform's ports, never an adapter
 *   hosting/   static sites as served (issue 42): rules, build-end compression, the request path; a floor beside
 *              domain/ for the roles that build (builder/) and serve (ingest/, api/) sites; never an adapter
 *   roles      ingest/, processor/, api/, builder/: import the floors, never each other, never an adapter
 *   service/   the composition root: imports everything
 * Clients run elsewhere and share only the contract: `console/` (browsers) and `sdk/` import schemas/ as types, and as
 * values only modules without zod (limits, scope names, event names), so no zod reaches a bundle. `bench/` may import
 * anything; nothing imports it. Tests and test support are exempt.
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ROLES = ['ingest', 'processor', 'api', 'builder'];
const ALLOWED: Record<string, string[]> = {
  schemas: ['schemas'],
  platform: ['schemas', 'platform'],
  domain: ['schemas', 'platform', 'domain'],
  hosting: ['schemas', 'platform', 'domain', 'hosting'],
  ingest: ['schemas', 'platform', 'domain', 'hosting', 'ingest'],
  processor: ['schemas', 'platform', 'domain', 'processor'],
  api: ['schemas', 'platform', 'domain', 'hosting', 'api'],
  builder: ['schemas', 'platform', 'domain', 'hosting', 'builder'],
  service: ['schemas', 'platform', 'domain', 'hosting', 'service', ...ROLES],
  console: ['console', 'schemas'],
  sdk: ['sdk', 'schemas'],
  cli: ['cli', 'schemas'],
  bench: ['schemas', 'platform', 'domain', 'hosting', 'service', 'bench', 'test', 'sdk', ...ROLES],
};
/** Floors whose code may not reach an adapter: only the composition root (and benches) choose them. */
const NO_ADAPTERS = new Set(['domain', 'hosting', ...ROLES]);
/** Clients: what they take from schemas/ must be erased (types) or free of zod. */
const CLIENTS = new Set(['console', 'sdk', 'cli']);

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'node_modules' || name === 'fixtures' ? [] : files(path);
    return /\.tsx?$/.test(name) && !name.endsWith('.d.ts') && !/\.(test|test-scenarios)\.tsx?$/.test(name) ? [path] : [];
  });
}

interface Import {
  target: string;
  typeOnly: boolean;
}

function imports(file: string): Import[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:^|\n)\s*(import|export)\s+(type\s+)?([^;]*?)from\s+['"](\.{1,2}\/[^'"]+)['"]/g)].map((m) => ({
    target: relative(ROOT, resolve(dirname(file), m[4]!)),
    // `import type {...}` or `import { type A, type B }` (every name a type) is erased from the output
    typeOnly: Boolean(m[2]) || /^\{\s*(?:type\s+[\w$]+(?:\s+as\s+[\w$]+)?\s*,?\s*)+\}\s*$/.test(m[3]!.trim()),
  }));
}

/** A module that reaches zod, itself or through what it imports. */
const zodCache = new Map<string, boolean>();
function reachesZod(target: string): boolean {
  const cached = zodCache.get(target);
  if (cached !== undefined) return cached;
  zodCache.set(target, false);
  const path = join(ROOT, target);
  const text = readFileSync(path, 'utf8');
  // `import type { z } from 'zod'` is erased: the typed client (schemas/api/client.ts) names zod's types only
  const result = /^\s*(?:import|export)\s+(?!type\s)[^;]*from\s+['"]zod['"]/m.test(text) || imports(path).some((i) => !i.typeOnly && reachesZod(i.target));
  zodCache.set(target, result);
  return result;
}

describe('architecture: who may import whom', () => {
  for (const [folder, allowed] of Object.entries(ALLOWED)) {
    it(`${folder}/ imports only ${allowed.join(', ')}`, () => {
      const offenders: string[] = [];
      let seen = 0;
      for (const file of files(join(ROOT, folder))) {
        for (const { target, typeOnly } of imports(file)) {
          seen++;
          const top = target.split(/[\\/]/)[0]!;
          const where = `${relative(ROOT, file)} -> ${target}`;
          if (!allowed.includes(top)) offenders.push(where);
          else if (NO_ADAPTERS.has(folder) && target.startsWith(join('platform', 'adapters'))) offenders.push(`${where} (an adapter)`);
          else if (CLIENTS.has(folder) && top === 'schemas' && !typeOnly && reachesZod(target))
            offenders.push(`${where} (zod in a client: import it as a type)`);
        }
      }
      expect(seen).toBeGreaterThan(0);
      expect(offenders).toEqual([]);
    });
  }

  it('nothing imports a bench', () => {
    const offenders = Object.keys(ALLOWED)
      .filter((f) => f !== 'bench')
      .flatMap((folder) =>
        files(join(ROOT, folder)).flatMap((file) =>
          imports(file)
            .filter((i) => i.target.startsWith('bench'))
            .map((i) => `${relative(ROOT, file)} -> ${i.target}`),
        ),
      );
    expect(offenders).toEqual([]);
  });

  it('knows a zod module when it sees one (the client rule can fail)', () => {
    expect(reachesZod(join('schemas', 'api', 'errors.ts'))).toBe(true);
    expect(reachesZod(join('schemas', 'limits.ts'))).toBe(false);
    expect(reachesZod(join('schemas', 'api', 'client.ts'))).toBe(false);
  });
});

/**
 * Issue 39 §3: a route's path is written once, in the route table (schemas/api/route-table.ts); the API registers
 * from it and every client calls through the typed client, so no other production file spells a `/v1/` path (comments
 * aside).
 */
/** Not API routes: the console's pages and assets, and the operator's /metrics and /healthz (hidden, no /v1). */
const ROUTES_OUTSIDE_THE_API = new Set(['api/console/console-routes.ts', 'api/meta/ops-routes.ts']);
/** `app.get(` and its kin, or `app.route({` without `...declared(` first. */
const registersByHand = (code: string) =>
  /\bapp\.(?:get|post|patch|put|delete|head|all)\s*(?:<[^(]*>)?\(/.test(code) || /\bapp\.route\s*\(\s*\{(?!\s*\.\.\.declared\()/.test(code);
/**
 * The SDK packages stand alone (they import nothing of the service, so they publish as they are): each keeps its own
 * copy of the edge paths in its wire module, tied to the table's EDGE_PATHS by its wire test.
 */
const SDK_WIRE_COPIES = new Set(['sdk/node/wire.ts', 'sdk/browser/src/wire.ts']);
const PRODUCTION = ['api', 'builder', 'cli', 'console', 'domain', 'hosting', 'ingest', 'platform', 'processor', 'schemas', 'sdk', 'service'];

/** A file's code without its comments (a `//` after `:` is a URL in a string, not a comment). */
function codeOf(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|\s)\/\/.*$/gm, '$1');
}
/** A fetch, or an HTTP method spelled as a string (what a request made beside the typed client needs). */
const requestsByHand = (code: string) => /\bfetch\s*\(|['"`](?:GET|POST|PUT|PATCH|DELETE|HEAD)['"`]/.test(code);
const spellsV1Path = (code: string) => /\/v1(?:\/|['"`])/.test(code);

describe('architecture: one route table', () => {
  it('no production file but the route table spells a /v1/ path', () => {
    const offenders: string[] = [];
    for (const folder of PRODUCTION) {
      for (const file of files(join(ROOT, folder))) {
        const rel = relative(ROOT, file).split('\\').join('/');
        if (rel === 'schemas/api/route-table.ts' || SDK_WIRE_COPIES.has(rel)) continue;
        const spells = spellsV1Path(codeOf(readFileSync(file, 'utf8')));
        if (spells) offenders.push(rel);
      }
    }
    expect(offenders, 'use ROUTES / routePath / the typed client').toEqual([]);
  });

  it('the API registers its routes only from the table (app.route with declared(id))', () => {
    const offenders: string[] = [];
    for (const file of files(join(ROOT, 'api'))) {
      const rel = relative(ROOT, file).split('\\').join('/');
      if (ROUTES_OUTSIDE_THE_API.has(rel)) continue;
      const hand = registersByHand(codeOf(readFileSync(file, 'utf8')));
      if (hand) offenders.push(rel);
    }
    expect(offenders, 'register with app.route({ ...declared(id), config, handler })').toEqual([]);
  });

  it('the console reaches the API only through its typed client (console/app/api.ts)', () => {
    const offenders = files(join(ROOT, 'console'))
      .map((file) => relative(ROOT, file).split('\\').join('/'))
      .filter((rel) => rel !== 'console/app/api.ts' && /\bfetch\s*\(|\bXMLHttpRequest\b/.test(codeOf(readFileSync(join(ROOT, rel), 'utf8'))));
    expect(offenders).toEqual([]);
  });

  it('the CLI reaches the API only through its typed client (cli/src/client.ts holds the one fetch)', () => {
    const offenders = files(join(ROOT, 'cli'))
      .map((file) => relative(ROOT, file).split('\\').join('/'))
      .filter((rel) => rel !== 'cli/src/client.ts' && requestsByHand(codeOf(readFileSync(join(ROOT, rel), 'utf8'))));
    expect(offenders, 'call client.api.call(id, { params, query, body })').toEqual([]);
  });

  it('sees a request made by hand', () => {
    expect(requestsByHand("client.callRoot<X>('GET', `/api/0/x/`)")).toBe(true);
    expect(requestsByHand("client.call<ProjectList>('GET', '/projects')")).toBe(true);
    expect(requestsByHand("await fetch(url, { method: 'POST' })")).toBe(true);
    expect(requestsByHand("client.api.call('listProjects')")).toBe(false);
  });

  it('sees a route registered by hand', () => {
    expect(registersByHand("app.get('/x', {}, h)")).toBe(true);
    expect(registersByHand("app.post<{ Body: B }>('/x', {}, h)")).toBe(true);
    expect(registersByHand("app.route({ method: 'GET', url: '/x', handler })")).toBe(true);
    expect(registersByHand("app.route({ ...declared('listFlags'), config, handler })")).toBe(false);
  });

  it('sees a path in code and not in a comment', () => {
    expect(spellsV1Path(codeOf('const u = `/v1/projects/${slug}`;'))).toBe(true);
    expect(spellsV1Path(codeOf("fetch('/v1')"))).toBe(true);
    expect(spellsV1Path(codeOf('/** GET /v1/projects */\nconst a = 1; // see /v1/x\nconst b = "https://h/x";'))).toBe(false);
  });
});

/**
 * Issue 39 §4: production code carries no test switch for bus names. Topics and consumer groups are named once
 * (schemas/topics.ts) and BUS_NAME_SUFFIX, applied by the bus (platform/adapters/bus/name-suffix.ts), keeps runs
 * sharing one Kafka cluster apart; so no production parameter or option may override a topic or a group: nothing
 * named like one (`topic`, `deployTopic`, `consumerGroup`, `groupId`, `group`, ...) declared optional or with a default.
 */
// `groupId` (one) is a consumer group's name in the bus's vocabulary; `groupIds` are always error issues' ids, and a
// JSX attribute (`groupId={...}`) is a component's prop.
const BUS_NAME = String.raw`(?:[a-z]\w*)?(?:[tT]opics?|[cC]onsumerGroups?|[gG]roupId)|group`;
function busNameOverrides(code: string): string[] {
  const declared = new RegExp(String.raw`(?<![\w.$])(${BUS_NAME})\s*(?:\?\s*:|:[^,;(){}=]*=(?![=>])|=(?![=>{]))`, 'g');
  return (
    [...code.matchAll(declared)]
      // a local variable (`const topic = ...`), or a type annotation (`const t: Topic = ...`): not a parameter
      .filter((m) => !/\b(?:const|let|var)\s+\S*$|\b(?:const|let|var)\s+[\w$]+\s*:\s*$/.test(code.slice(Math.max(0, m.index - 40), m.index)))
      .map((m) => code.slice(m.index).split('\n')[0]!.trim())
  );
}

describe('architecture: no test switches in production code', () => {
  it('no production parameter or option overrides a bus topic or consumer group', () => {
    const offenders: string[] = [];
    for (const folder of PRODUCTION) {
      for (const file of files(join(ROOT, folder))) {
        const rel = relative(ROOT, file).split('\\').join('/');
        for (const line of busNameOverrides(codeOf(readFileSync(file, 'utf8')))) offenders.push(`${rel}: ${line}`);
      }
    }
    expect(offenders, 'set BUS_NAME_SUFFIX (config env) instead of passing topic or group names').toEqual([]);
  });

  it('sees an override, and not a required name or a local variable', () => {
    expect(busNameOverrides('opts: { topic?: string; consumerGroup?: string } = {},')).toEqual([
      'topic?: string; consumerGroup?: string } = {},',
      'consumerGroup?: string } = {},',
    ]);
    expect(busNameOverrides('  deployTopic?: string;')).toEqual(['deployTopic?: string;']);
    expect(busNameOverrides('function q(db: Db, topic: string = TOPICS.deployRequests) {}')).toHaveLength(1);
    expect(busNameOverrides('function s({ groupId = CONSUMER_GROUPS.builder }) {}')).toHaveLength(1);
    expect(busNameOverrides('subscribe(topic: string, groupId: string, handler: BatchHandler)')).toEqual([]);
    expect(busNameOverrides('const topic = TOPICS.errorEvents;\nlog.error({ topic: m.topic });\ngroupId: string | null;')).toEqual([]);
    expect(busNameOverrides('const t: Topic = { name, log };')).toEqual([]);
    expect(busNameOverrides('groupIds?: string[];\n<IssueTags groupId={groupId} />')).toEqual([]);
  });
});

/**
 * Issue 39 §2: SQL has one home per family. A production file whose strings hold an SQL statement is its family's
 * repository (`*-repository.ts`, or a file in a `repositories/` folder), or it is where the stores themselves live
 * (adapters, migrations, ports).
 */
const isRepository = (rel: string) => rel.endsWith('-repository.ts') || rel.includes('/repositories/');
const SQL_HOMES = ['platform/adapters/', 'platform/migrations/', 'platform/ports/', 'platform/migrate.ts'];
/** The string literals of a file's code ('…', "…", `…` whole, with what they interpolate). */
const stringsOf = (code: string) => code.match(/`(?:\\[\s\S]|[^`\\])*`|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"/g) ?? [];
/** An SQL statement in one string: upper-case keywords, as every statement of ours is written. */
const SQL_STATEMENT = /\bSELECT\b[\s\S]*?\bFROM\b|\bINSERT\s+INTO\b|\bUPDATE\s+\w+\b[\s\S]*?\bSET\b|\bDELETE\s+FROM\b|\bWITH\s+\w+\s+AS\s*\(|\bON\s+CONFLICT\b/;
const holdsSql = (text: string) => stringsOf(codeOf(text)).some((s) => SQL_STATEMENT.test(s));
/**
 * One shape: `export const <name>Repository = { method(db, ...) {...} }` (an interface may type it), and no exported
 * function or second object beside it; types, constants and row mappers may be exported too.
 */
function repositoryShapeProblems(code: string): string[] {
  const objects = code.match(/^export const \w+\s*(?::[^=\n]+)?=\s*\{/gm) ?? [];
  const repositories = objects.filter((o) => /^export const \w+Repository\b/.test(o));
  const problems: string[] = [];
  if (repositories.length !== 1 || objects.length !== 1) problems.push(`exports ${objects.length} objects, ${repositories.length} named …Repository`);
  if (/^export (?:async\s+)?function\b/m.test(code)) problems.push('exports functions');
  return problems;
}

describe('architecture: SQL in repositories', () => {
  const production = PRODUCTION.flatMap((folder) => files(join(ROOT, folder))).map((file) => ({
    rel: relative(ROOT, file).split('\\').join('/'),
    text: readFileSync(file, 'utf8'),
  }));

  it('SQL lives in repositories', () => {
    const offenders: string[] = [];
    for (const { rel, text } of production) {
      if (isRepository(rel) || SQL_HOMES.some((home) => rel.startsWith(home))) continue;
      const sql = holdsSql(text);
      if (sql) offenders.push(rel);
    }
    expect(offenders, "move the statements into the family's *-repository.ts").toEqual([]);
  });

  it('one repository shape: one exported `…Repository` object, no exported functions', () => {
    const offenders: string[] = [];
    let seen = 0;
    for (const { rel, text } of production) {
      if (!isRepository(rel)) continue;
      seen++;
      const problems = repositoryShapeProblems(codeOf(text));
      if (problems.length) offenders.push(`${rel}: ${problems.join('; ')}`);
    }
    expect(seen).toBeGreaterThan(20);
    expect(offenders).toEqual([]);
  });

  it('sees SQL in strings, and not in comments or prose', () => {
    expect(holdsSql("db.query('SELECT id FROM projects WHERE slug = $1', [slug])")).toBe(true);
    expect(holdsSql('tx.query(`INSERT INTO t (a) VALUES ($1)`)')).toBe(true);
    expect(holdsSql("q(`UPDATE deploys d\n  SET status = 'ready'`)")).toBe(true);
    expect(holdsSql('q("DELETE FROM t")')).toBe(true);
    expect(holdsSql('q(`WITH due AS (SELECT 1) UPDATE x`)')).toBe(true);
    expect(holdsSql('q(`... ON CONFLICT DO NOTHING`)')).toBe(true);
    expect(holdsSql("// SELECT id FROM projects\n/** DELETE FROM t */\nconst a = 'select a project from the list';")).toBe(false);
    expect(holdsSql("db.query('SELECT 1')")).toBe(false);
  });

  it('sees a repository of another shape', () => {
    expect(repositoryShapeProblems('export const fooRepository = {\n  async get(db) {},\n};')).toEqual([]);
    expect(repositoryShapeProblems('export interface FooRepository {}\nexport const fooRepository: FooRepository = {\n};')).toEqual([]);
    expect(repositoryShapeProblems('export const toFoo = (r: Row) => r;\nexport const fooRepository = {\n};')).toEqual([]);
    expect(repositoryShapeProblems('export async function getFoo(db) {}')).not.toEqual([]);
    expect(repositoryShapeProblems('export const fooRepository = {\n};\nexport function bar() {}')).not.toEqual([]);
    expect(repositoryShapeProblems('export const fooLedger = {\n};\nexport const barPushes = {\n};')).not.toEqual([]);
    expect(repositoryShapeProblems('export const fooRepository = {\n};\nexport const bar = {\n};')).not.toEqual([]);
  });
});
