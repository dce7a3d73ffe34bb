import { mkdtemp, readFile, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPORTED_LINES_MAX, RULE_FILE_MAX_BYTES } from '../rules/rule-bounds.ts';
import { compileSite } from './compile-site.ts';

/** The build end's compile of a deploy's output: what it writes, what it tells the build log, and its bounds. */
async function output(files: Record<string, string | Buffer>): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'compile-site-'));
  for (const [rel, body] of Object.entries(files)) await writeFile(path.join(dir, rel), body);
  return dir;
}

describe('compileSite', () => {
  it('names at most REPORTED_LINES_MAX ignored lines and counts the rest', async () => {
    const bad = Array.from({ length: 50 }, (_, i) => `/p${i} /t${i} 418`).join('\n');
    const notes: string[] = [];
    await compileSite(await output({ _redirects: bad }), { note: (t) => notes.push(t) });
    expect(notes.filter((n) => /_redirects line \d+ ignored: status 418/.test(n))).toHaveLength(REPORTED_LINES_MAX);
    expect(notes).toContain(`hosting: _redirects: ${50 - REPORTED_LINES_MAX} more lines ignored`);
    expect(notes[0]).toBe('hosting: 0 redirect rules, 0 header rules; 0 files precompressed');
  });

  it('reads a rule file only up to RULE_FILE_MAX_BYTES, and says so', async () => {
    const line = '/a /b 301\n';
    const huge = line.repeat(Math.ceil((RULE_FILE_MAX_BYTES * 2) / line.length));
    const notes: string[] = [];
    const manifest = await compileSite(await output({ _redirects: huge }), { note: (t) => notes.push(t) });
    expect(notes).toContain(`hosting: _redirects is over ${RULE_FILE_MAX_BYTES} bytes; only its first ${RULE_FILE_MAX_BYTES} are read`);
    expect(manifest?.redirects).toHaveLength(1_000);
  });

  it('the spa option writes the fallback only when _redirects has no rule for /*', async () => {
    const spa = await compileSite(await output({ 'index.html': 'app' }), { spa: true, note: () => undefined });
    expect(spa?.redirects).toEqual([{ from: '/*', to: '/index.html', status: 200, force: false, line: 0 }]);
    const own = await compileSite(await output({ 'index.html': 'app', _redirects: '/* /shell.html 200' }), { spa: true, note: () => undefined });
    expect(own?.redirects.map((r) => r.to)).toEqual(['/shell.html']);
  });

  it('keeps a compressed sibling only when it saves a tenth, and never for small or binary files', async () => {
    const random = Buffer.from(Array.from({ length: 4096 }, () => Math.floor(Math.random() * 256)));
    const dir = await output({ 'noise.js': random, 'small.css': 'a{}', 'image.png': Buffer.alloc(8192), 'page.html': `<p>${'hello '.repeat(500)}</p>` });
    const manifest = await compileSite(dir, { note: () => undefined });
    expect(manifest?.files['noise.js']?.enc).toBeUndefined();
    expect(manifest?.files['small.css']?.enc).toBeUndefined();
    expect(manifest?.files['image.png']?.enc).toBeUndefined();
    expect(manifest?.files['page.html']?.enc).toEqual(['br', 'gzip']);
    expect((await stat(path.join(dir, 'page.html.br'))).size).toBeLessThan(3000);
    await expect(stat(path.join(dir, 'noise.js.br'))).rejects.toThrow();
  });

  it('a second compile of the same output (a retried build end) starts over', async () => {
    const dir = await output({ 'a.html': 'x' });
    await compileSite(dir, { note: () => undefined });
    await writeFile(path.join(dir, '_headers'), '/*\n  X-A: 1');
    await compileSite(dir, { note: () => undefined });
    expect(JSON.parse(await readFile(path.join(dir, '.cx', 'site.json'), 'utf8')).headers).toHaveLength(1);
  });
});
