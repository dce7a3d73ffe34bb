import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The layering of ../shared/ARCHITECTURE.md, checked on the source: `schemas/` imports nothing of ours;
 * `platform/` (the floor every role stands on) imports only schemas; the roles (`ingest/`, `processor/`,
 * `api/`) import schemas and platform, never each other; only the composition root (`service/`) imports
 * the roles. Steps and routes see ports: no role imports an adapter. Tests and test support are exempt.
 * `console/` (the browser app) imports itself and schema constants only.
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ROLES = ['ingest', 'processor', 'api', 'builder'];
const ALLOWED: Record<string, string[]> = {
  schemas: ['schemas'],
  platform: ['schemas', 'platform'],
  ingest: ['schemas', 'platform', 'ingest'],
  processor: ['schemas', 'platform', 'processor'],
  api: ['schemas', 'platform', 'api'],
  builder: ['schemas', 'platform', 'builder'],
  service: ['schemas', 'platform', 'service', ...ROLES],
  // The console runs in browsers: it reaches the service only over the /v1 API, and takes nothing from the server but
  // zod-free constants of schemas/ (scope names, event names).
  console: ['console', 'schemas'],
};

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return files(path);
    return /\.tsx?$/.test(name) && !name.endsWith('.d.ts') && !/\.(test|scenarios)\.tsx?$/.test(name) ? [path] : [];
  });
}

function imports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+['"](\.{1,2}\/[^'"]+)['"]/g)].map((m) => relative(ROOT, resolve(dirname(file), m[1]!)));
}

describe('architecture: who may import whom', () => {
  for (const [folder, allowed] of Object.entries(ALLOWED)) {
    it(`${folder}/ imports only ${allowed.join(', ')}`, () => {
      const offenders: string[] = [];
      let seen = 0;
      for (const file of files(join(ROOT, folder))) {
        for (const target of imports(file)) {
          seen++;
          const top = target.split(/[\\/]/)[0]!;
          const roleImportsAdapter = ROLES.includes(folder) && target.startsWith(join('platform', 'adapters'));
          if (!allowed.includes(top) || roleImportsAdapter) offenders.push(`${relative(ROOT, file)} -> ${target}`);
        }
      }
      expect(seen).toBeGreaterThan(0);
      expect(offenders).toEqual([]);
    });
  }
});
