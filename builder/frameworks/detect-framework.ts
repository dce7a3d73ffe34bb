/**
 * Framework detection (issue 42), pure and table-driven: from a checkout's `package.json` (and which lockfile sits
 * next to it), the build command and output directory a project gets when its settings leave them unset, as Vercel's
 * framework presets do. The first row whose dependency the package names wins (Next before React, SvelteKit and Astro
 * before Vite, which they build on). No `package.json`: a plain static site, no command, the tree itself. A
 * `package.json` naming none of them: nothing detected (the settings' own values apply, a plain static site).
 *
 * The builder has no install step of its own: a detected command installs first, with the package manager the
 * lockfile names (`npm ci`, `pnpm install --frozen-lockfile`, `yarn install --frozen-lockfile`; `npm install` without
 * one), then runs the package's `build` script, or the framework's own build when there is no script. `npm ci` deletes
 * `node_modules` first, which would throw away what the build cache restored: when the cache kept a `node_modules`
 * installed from this very `package.json` and lockfile (`keptModules`), the install is NPM_KEEP_INSTALL instead, which
 * checks the restored tree and installs only what is missing. pnpm and yarn keep `node_modules` on their own.
 */
export interface DetectedFramework {
  /** `vite`, `astro`, `sveltekit`, `nextjs`, `create-react-app`, `static`. */
  id: string;
  /** As the build log says it: "Detected Vite: npm run build → dist". */
  name: string;
  /** Empty: no command (a plain static site). */
  buildCommand: string;
  outputDir: string;
}

interface FrameworkRow {
  id: string;
  name: string;
  /** Any of these among the package's dependencies selects the row. */
  dependencies: string[];
  /** Run when the package has no `build` script (after the install). */
  build: string;
  outputDir: string;
}

/** First match wins: the more specific frameworks come before the tools they build on. */
export const FRAMEWORKS: readonly FrameworkRow[] = [
  { id: 'nextjs', name: 'Next.js (static export)', dependencies: ['next'], build: 'npx next build', outputDir: 'out' },
  { id: 'sveltekit', name: 'SvelteKit (static)', dependencies: ['@sveltejs/kit'], build: 'npx vite build', outputDir: 'build' },
  { id: 'astro', name: 'Astro', dependencies: ['astro'], build: 'npx astro build', outputDir: 'dist' },
  { id: 'create-react-app', name: 'Create React App', dependencies: ['react-scripts'], build: 'npx react-scripts build', outputDir: 'build' },
  { id: 'vite', name: 'Vite', dependencies: ['vite'], build: 'npx vite build', outputDir: 'dist' },
];

export const STATIC_SITE: DetectedFramework = { id: 'static', name: 'a static site (no package.json)', buildCommand: '', outputDir: '.' };

/** Lockfiles, in the order they are looked for, and the install each asks for. */
export const LOCKFILES: ReadonlyArray<readonly [file: string, install: string]> = [
  ['pnpm-lock.yaml', 'pnpm install --frozen-lockfile'],
  ['yarn.lock', 'yarn install --frozen-lockfile'],
  ['package-lock.json', 'npm ci'],
  ['npm-shrinkwrap.json', 'npm ci'],
];

/** npm's install over a restored `node_modules` whose `package.json` and lockfile are those it was installed from. */
export const NPM_KEEP_INSTALL = 'npm install --prefer-offline --no-audit --no-fund';

/**
 * What a checkout builds as: `pkg` is its parsed `package.json` (undefined when there is none), `files` the names at
 * its root (for the lockfile). Undefined when a `package.json` names no known framework (or is no object).
 */
export function detectFramework(pkg: unknown, files: readonly string[] = [], keptModules = false): DetectedFramework | undefined {
  if (pkg === undefined) return STATIC_SITE;
  if (!isObject(pkg)) return undefined;
  const deps = new Set([...Object.keys(objectAt(pkg, 'dependencies')), ...Object.keys(objectAt(pkg, 'devDependencies'))]);
  const row = FRAMEWORKS.find((f) => f.dependencies.some((d) => deps.has(d)));
  if (!row) return undefined;
  const locked = LOCKFILES.find(([file]) => files.includes(file))?.[1] ?? 'npm install';
  const install = locked === 'npm ci' && keptModules ? NPM_KEEP_INSTALL : locked;
  const hasBuildScript = typeof objectAt(pkg, 'scripts').build === 'string';
  const run = hasBuildScript ? (install.startsWith('pnpm') ? 'pnpm run build' : install.startsWith('yarn') ? 'yarn build' : 'npm run build') : row.build;
  return { id: row.id, name: row.name, buildCommand: `${install} && ${run}`, outputDir: row.outputDir };
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const objectAt = (o: Record<string, unknown>, key: string): Record<string, unknown> => (isObject(o[key]) ? o[key] : {});
