import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadKafkajs } from './kafkajs-runtime.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const RUNTIME_FILE = 'platform/adapters/bus/kafkajs-runtime.ts';

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    if (name === 'node_modules' || name === 'data' || name.startsWith('.')) return [];
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.(ts|mts|js|mjs)$/.test(name) ? [path] : [];
  });
}

describe('kafkajs is loaded only through loadKafkajs()', () => {
  it('installs every replacement in this process (tests load kafkajs as production does)', () => {
    const runtime = loadKafkajs();
    expect(runtime.refused).toBeUndefined();
    expect(runtime.replacements).toEqual({ chunkedEncoder: true, nativeCrc: true, requestQueueFix: true, noDelaySockets: true });
  });

  it('no file but the runtime imports or requires a value from kafkajs', () => {
    // `import type` is erased; any other import of 'kafkajs' or its internals would load it before the
    // replacements are installed.
    const valueImport = /(?:^|\n)\s*import\s+(?!type\b)[^;]*?from\s+['"]kafkajs(?:\/[^'"]*)?['"]|import\(\s*['"]kafkajs|require\(\s*['"]kafkajs['"]/;
    const offenders = sourceFiles(ROOT)
      .map((p) => relative(ROOT, p))
      .filter((p) => p !== RUNTIME_FILE && valueImport.test(readFileSync(join(ROOT, p), 'utf8')));
    expect(offenders).toEqual([]);
  });

  it('refuses, and says why, when kafkajs was loaded first: no mix of patched and unpatched code', () => {
    const script = `
      import 'kafkajs';
      const { loadKafkajs } = await import(${JSON.stringify(join(ROOT, RUNTIME_FILE))});
      const r = loadKafkajs();
      process.stdout.write(JSON.stringify({ refused: r.refused, replacements: r.replacements }));
    `;
    const out = JSON.parse(execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' }));
    expect(out.refused).toMatch(/kafkajs was loaded before its replacements could be installed/);
    expect(out.replacements).toEqual({ chunkedEncoder: false, nativeCrc: false, requestQueueFix: false, noDelaySockets: false });
  });
});
