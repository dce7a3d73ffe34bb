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
  ingest: ['schemas', 'platform', 'domain', 'ingest'],
  processor: ['schemas', 'platform', 'domain', 'processor'],
  api: ['schemas', 'platform', 'domain', 'api'],
  builder: ['schemas', 'platform', 'domain', 'builder'],
  service: ['schemas', 'platform', 'domain', 'service', ...ROLES],
  console: ['console', 'schemas'],
  sdk: ['sdk', 'schemas'],
  cli: ['cli', 'schemas'],
  bench: ['schemas', 'platform', 'domain', 'service', 'bench', 'test', 'sdk', ...ROLES],
};
/** Floors whose code may not reach an adapter: only the composition root (and benches) choose them. */
const NO_ADAPTERS = new Set(['domain', ...ROLES]);
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
  const result = /from\s+['"]zod['"]/.test(text) || imports(path).some((i) => !i.typeOnly && reachesZod(i.target));
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
  });
});
