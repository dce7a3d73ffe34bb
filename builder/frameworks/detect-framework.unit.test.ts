import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { installDigest } from '../build-cache/build-cache.ts';
import { detectFramework, NPM_KEEP_INSTALL } from './detect-framework.ts';
import { buildDefaults, frameworkOfCheckout, PACKAGE_JSON_MAX_BYTES } from './framework-of-checkout.ts';

/** Framework detection (issue 42) from fixture package.json objects: each framework listed, and what detects nothing. */
const build = { scripts: { build: 'whatever builds' } };

describe('detectFramework', () => {
  it.each([
    ['Vite', { ...build, devDependencies: { vite: '^5.0.0' } }, 'vite', 'npm install && npm run build', 'dist'],
    ['Astro', { ...build, dependencies: { astro: '^4.0.0' } }, 'astro', 'npm install && npm run build', 'dist'],
    [
      'SvelteKit static',
      { ...build, devDependencies: { '@sveltejs/kit': '^2', '@sveltejs/adapter-static': '^3', vite: '^5' } },
      'sveltekit',
      'npm install && npm run build',
      'build',
    ],
    ['Next static export', { ...build, dependencies: { next: '14.0.0', react: '18' } }, 'nextjs', 'npm install && npm run build', 'out'],
    ['Create React App', { ...build, dependencies: { 'react-scripts': '5.0.1', react: '18' } }, 'create-react-app', 'npm install && npm run build', 'build'],
  ])('%s', (_name, pkg, id, command, output) => {
    expect(detectFramework(pkg)).toEqual({ id, name: expect.any(String), buildCommand: command, outputDir: output });
  });

  it('a plain static site without package.json: no command, the tree itself', () => {
    expect(detectFramework(undefined)).toMatchObject({ id: 'static', buildCommand: '', outputDir: '.' });
  });

  it("installs with the lockfile's package manager, and runs the framework's own build without a build script", () => {
    expect(detectFramework({ ...build, devDependencies: { vite: '5' } }, ['package-lock.json'])?.buildCommand).toBe('npm ci && npm run build');
    expect(detectFramework({ ...build, devDependencies: { vite: '5' } }, ['pnpm-lock.yaml'])?.buildCommand).toBe(
      'pnpm install --frozen-lockfile && pnpm run build',
    );
    expect(detectFramework({ ...build, devDependencies: { vite: '5' } }, ['yarn.lock'])?.buildCommand).toBe('yarn install --frozen-lockfile && yarn build');
    expect(detectFramework({ dependencies: { astro: '4' } })?.buildCommand).toBe('npm install && npx astro build');
  });

  it('detects nothing for a package naming no framework, or a package.json that is no object', () => {
    expect(detectFramework({ ...build, dependencies: { express: '4' } })).toBeUndefined();
    expect(detectFramework([])).toBeUndefined();
    expect(detectFramework('vite')).toBeUndefined();
    expect(detectFramework({ dependencies: ['vite'] })).toBeUndefined();
  });
});

describe('buildDefaults, on a checkout', () => {
  const tree = (files: Record<string, string>) => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'detect-'));
    for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
    return dir;
  };
  const vite = JSON.stringify({ ...build, devDependencies: { vite: '5' } });

  it('fills only what the settings leave unset, and says so in the log', async () => {
    const notes: string[] = [];
    const dir = tree({ 'package.json': vite, 'package-lock.json': '{}' });
    expect(await buildDefaults({ buildCommand: '', outputDir: '.' }, dir, (t) => notes.push(t))).toEqual({
      buildCommand: 'npm ci && npm run build',
      outputDir: 'dist',
      framework: 'vite',
    });
    expect(notes[0]).toMatch(/^Detected Vite: npm ci && npm run build → dist/);
    expect(await buildDefaults({ buildCommand: 'make site', outputDir: '.' }, dir, () => {})).toMatchObject({ buildCommand: 'make site', outputDir: 'dist' });
    expect(await buildDefaults({ buildCommand: 'make site', outputDir: 'public' }, dir, () => {})).toEqual({ buildCommand: 'make site', outputDir: 'public' });
    // Explicitly none: a command that does nothing, the tree itself as `./`.
    expect(await buildDefaults({ buildCommand: 'true', outputDir: './' }, dir, () => {})).toEqual({ buildCommand: 'true', outputDir: './' });
  });

  it('over a node_modules the build cache restored from this very package.json and lockfile, npm install instead of npm ci', async () => {
    const dir = tree({ 'package.json': vite, 'package-lock.json': '{"lockfileVersion": 3}' });
    const digest = await installDigest(dir);
    expect(digest).toMatch(/^[0-9a-f]{64}$/);
    const notes: string[] = [];
    const unset = { buildCommand: '', outputDir: '.' };
    expect((await buildDefaults(unset, dir, (t) => notes.push(t), { installedFrom: digest })).buildCommand).toBe(`${NPM_KEEP_INSTALL} && npm run build`);
    expect(notes.join('\n')).toContain('build cache: node_modules kept');
    // Another lockfile, another package.json, or a restored tree of unknown origin: npm ci, said as well.
    for (const [files, cache] of [
      [{ 'package.json': vite, 'package-lock.json': '{"lockfileVersion": 2}' }, { installedFrom: digest }],
      [{ 'package.json': vite.replace('"5"', '"6"'), 'package-lock.json': '{"lockfileVersion": 3}' }, { installedFrom: digest }],
      [{ 'package.json': vite, 'package-lock.json': '{"lockfileVersion": 3}' }, {}],
    ] as const) {
      const said: string[] = [];
      expect((await buildDefaults(unset, tree(files), (t) => said.push(t), cache)).buildCommand).toBe('npm ci && npm run build');
      expect(said.join('\n')).toContain('build cache: node_modules not kept');
    }
    // No cache at all: npm ci, nothing said of a cache; a command the settings set is never rewritten.
    expect((await buildDefaults(unset, dir, (t) => notes.push(t))).buildCommand).toBe('npm ci && npm run build');
    expect((await buildDefaults({ buildCommand: 'npm ci && vite build', outputDir: '.' }, dir, () => {}, { installedFrom: digest })).buildCommand).toBe(
      'npm ci && vite build',
    );
    // pnpm and yarn keep node_modules by themselves: their commands stay.
    const pnpm = tree({ 'package.json': vite, 'pnpm-lock.yaml': '' });
    expect((await buildDefaults(unset, pnpm, () => {}, { installedFrom: digest })).buildCommand).toBe('pnpm install --frozen-lockfile && pnpm run build');
    // A lockfile that is a link is no lockfile.
    const linked = tree({ 'package.json': vite });
    symlinkSync(path.join(dir, 'package-lock.json'), path.join(linked, 'package-lock.json'));
    expect(await installDigest(linked)).toBeUndefined();
  });

  it('never follows a package.json link out of the tree, nor reads a huge or broken one', async () => {
    const outside = tree({ 'package.json': vite });
    const linked = tree({});
    symlinkSync(path.join(outside, 'package.json'), path.join(linked, 'package.json'));
    const notes: string[] = [];
    expect(await frameworkOfCheckout(linked, (t) => notes.push(t))).toBeUndefined();
    expect(await frameworkOfCheckout(tree({ 'package.json': ' '.repeat(PACKAGE_JSON_MAX_BYTES + 1) }), (t) => notes.push(t))).toBeUndefined();
    expect(await frameworkOfCheckout(tree({ 'package.json': '{"devDependencies": {"vite": ' }), (t) => notes.push(t))).toBeUndefined();
    expect(notes).toHaveLength(3);
    const dirPkg = tree({});
    mkdirSync(path.join(dirPkg, 'package.json'));
    expect(await frameworkOfCheckout(dirPkg, () => {})).toBeUndefined();
    expect(await frameworkOfCheckout(tree({ 'index.html': '<h1>hi</h1>' }), () => {})).toMatchObject({ id: 'static' });
  });
});
