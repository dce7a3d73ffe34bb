import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { copyFile, chmod, link, lstat, mkdir, readdir, readFile, readlink, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { StepResult } from '../sandbox/build-process.ts';
import { buildCacheFile } from '../../domain/deploys/build-cache-files.ts';

/**
 * The build cache (issue 42), one per project and branch: the checkout's `node_modules` and the package managers'
 * caches (npm's, pnpm's store, yarn's, all pointed under the build's /work/cache), kept as one tar archive at
 * DATA_DIR/build-cache/<projectId>/<sha256(branch)>.tar.
 *   1. restore  after the checkout, before the build command: the branch's archive, else (a new branch) the default
 *               branch's, read-only. Its names are listed first (no absolute name, no `..`), then tar extracts it
 *               inside the sandbox, as the build's user, into the build's own directory (the archive mounted
 *               read-only for that step only, so no build ever sees another project's cache, or even its path);
 *               what came out is walked (directories, regular files, and links that stay inside their tree only;
 *               at most BUILD_CACHE_MAX_MB) and moved into place. Any failure deletes the archive, says
 *               "build cache dropped: <why>" and the build goes on without it: a cache never fails a build.
 *   2. env      npm_config_cache, npm_config_store_dir (pnpm) and YARN_CACHE_FOLDER under /work/cache, before the
 *               project's own variables (which may point them elsewhere).
 *   3. save     after a successful build only: the tree walked (same checks; its archive size estimated against
 *               BUILD_CACHE_MAX_MB), archived by tar inside the sandbox, copied under DATA_DIR as a temporary file
 *               and renamed over the branch's archive. A save that fails or is over the cap is skipped with a line;
 *               a tree the build left as its own branch's cache restored it is not written again ("unchanged").
 *   install     the digest of the `package.json` and npm lockfile a saved `node_modules` was installed from is kept in
 *               the archive (cache/install-digest); restore returns it, and a detected `npm ci` becomes an install that
 *               keeps the restored tree when the checkout's digest is the same (frameworks/detect-framework.ts).
 *   4. evict    every project's archives together past BUILD_CACHE_TOTAL_MB: the least recently used (a restore
 *               touches its archive) go, never the one just saved.
 */

/** What the builder knows of the cache of the build at hand (buildCacheOf makes it). */
export interface BuildCacheJob {
  /** DATA_DIR/build-cache. */
  dir: string;
  projectId: string;
  branch: string;
  /** The project's default branch: a new branch restores its cache (never writes it). */
  defaultBranch: string | undefined;
  maxBytes: number;
  totalBytes: number;
  /** The deploy was queued with `cache=false`: nothing is restored ("build cache skipped"); the save runs as ever. */
  skipRestore?: boolean;
  /** True when DATA_DIR's disk is low: nothing is saved. */
  diskLow(): Promise<boolean>;
  now(): number;
}

/** What of the build the cache steps use (build-run.ts). */
export interface CacheBuild {
  /** The build's /work and checkout on the host. */
  root: string;
  src: string;
  /** The build's own directory around /work, which the build's user can traverse (never DATA_DIR). */
  scratch: string;
  /** False with BUILD_SANDBOX=off: the steps are plain processes, which see the host's paths. */
  sandboxed: boolean;
  /** The same, as the steps see them. */
  inside: { root: string; src: string };
  /** A step in the build's sandbox, without network; `mount` is a read-only file for that step only. */
  run(argv: string[], mount?: { host: string; inside: string }): Promise<StepResult>;
  note(text: string): void;
}

const CACHE_DIR = 'cache';
const TOP = new Set([CACHE_DIR, 'node_modules']);
const STAGING = '.build-cache-restore';
const SAVING = '.build-cache-save.tar';
const MOUNTED = 'build-cache.tar';
const ARCHIVE_INSIDE = '/sandbox/build-cache.tar';
const TAR_BLOCK = 512;
/** cache/install-digest: what the archive's node_modules was installed from (installDigest). */
const INSTALL_DIGEST = 'install-digest';
/** The npm lockfiles a digest covers with package.json (the first that is there), and the largest read. */
const NPM_LOCKFILES = ['package-lock.json', 'npm-shrinkwrap.json'];
const LOCKFILE_MAX_BYTES = 64 * 1024 * 1024;

/** What a restore found: the digest of the install its node_modules came from, when it restored one and knew it. */
export interface RestoredCache {
  installedFrom?: string;
}

/**
 * sha256 of a checkout's `package.json` and npm lockfile (regular files only, never a link, within
 * LOCKFILE_MAX_BYTES): undefined without both. Two checkouts with the same digest install the same tree.
 */
export async function installDigest(src: string): Promise<string | undefined> {
  const h = createHash('sha256');
  const pkg = await smallFile(path.join(src, 'package.json'), LOCKFILE_MAX_BYTES);
  if (pkg === undefined) return undefined;
  for (const name of NPM_LOCKFILES) {
    const lock = await smallFile(path.join(src, name), LOCKFILE_MAX_BYTES);
    if (lock === undefined) continue;
    h.update(`package.json\0${pkg.length}\0`).update(pkg).update(`${name}\0${lock.length}\0`).update(lock);
    return h.digest('hex');
  }
  return undefined;
}

async function smallFile(file: string, max: number): Promise<Buffer | undefined> {
  const st = await lstat(file).catch(() => undefined);
  if (!st?.isFile() || st.size > max) return undefined;
  return readFile(file).catch(() => undefined);
}

/** The package managers' caches, under the build's /work/cache (`root` as the build sees it). */
export function buildCacheEnv(root: string): Record<string, string> {
  const dir = path.join(root, CACHE_DIR);
  return {
    npm_config_cache: path.join(dir, 'npm'),
    // npm's debug logs (one file a run) kept out of the cache, which would otherwise change on every build.
    npm_config_logs_dir: path.join(root, 'home', '.npm-logs'),
    npm_config_store_dir: path.join(dir, 'pnpm'),
    YARN_CACHE_FOLDER: path.join(dir, 'yarn'),
  };
}

const mb = (bytes: number) => `${Math.round((bytes / 1024 / 1024) * 10) / 10} MB`;
const failedStep = (r: StepResult) => r.timedOut || r.aborted || r.limit !== undefined || r.exitCode !== 0;

/** 1. restore: never throws, never fails the build. */
export async function restoreBuildCache(job: BuildCacheJob, b: CacheBuild): Promise<RestoredCache | undefined> {
  if (job.skipRestore) {
    b.note('build cache skipped (queued with cache=false): this build starts without it and saves a fresh one');
    return undefined;
  }
  const own = buildCacheFile(job.dir, job.projectId, job.branch);
  const fallback = job.defaultBranch && job.defaultBranch !== job.branch ? buildCacheFile(job.dir, job.projectId, job.defaultBranch) : undefined;
  const from = (await isFile(own))
    ? { file: own, branch: job.branch }
    : fallback && (await isFile(fallback))
      ? { file: fallback, branch: job.defaultBranch }
      : undefined;
  if (!from) {
    b.note('no build cache');
    return undefined;
  }
  const staging = path.join(b.root, STAGING);
  const why = await restoreFrom(job, b, from.file, staging).catch((err: unknown) => `${(err as Error).message}`);
  await rm(staging, { recursive: true, force: true }).catch(() => undefined);
  await rm(path.join(b.scratch, MOUNTED), { force: true }).catch(() => undefined);
  if (typeof why === 'string') {
    await rm(from.file, { force: true }).catch(() => undefined);
    b.note(`build cache dropped: ${why}`);
    return undefined;
  }
  const at = new Date(job.now());
  await utimes(from.file, at, at).catch(() => undefined);
  if (from.file === own) restoredTrees.set(b, signature(why.entries));
  b.note(`build cache restored (${mb(why.bytes)}, from ${from.branch})`);
  if (!why.movedModules) return {};
  const digest = (await smallFile(path.join(b.root, CACHE_DIR, INSTALL_DIGEST), 128))?.toString('utf8');
  return { installedFrom: digest && /^[0-9a-f]{64}$/.test(digest) ? digest : undefined };
}

async function restoreFrom(
  job: BuildCacheJob,
  b: CacheBuild,
  file: string,
  staging: string,
): Promise<string | { bytes: number; entries: string[]; movedModules: boolean }> {
  const size = (await lstat(file)).size;
  if (size > job.maxBytes) return `${mb(size)} is over BUILD_CACHE_MAX_MB (${mb(job.maxBytes)})`;
  const badName = await listingRefusal(file);
  if (badName) return badName;
  await rm(staging, { recursive: true, force: true });
  // The build's user reaches nothing under DATA_DIR: the archive is mounted from the build's own directory, a hard
  // link where BUILD_DIR shares DATA_DIR's file system, else a copy.
  const mounted = path.join(b.scratch, MOUNTED);
  await rm(mounted, { force: true });
  await link(file, mounted).catch(() => copyFile(file, mounted));
  await chmod(mounted, 0o644);
  const insideStaging = path.join(b.inside.root, STAGING);
  const extracted = await b.run(
    [
      '/bin/sh',
      '-c',
      'mkdir "$1" && { tar -x --no-same-owner --no-same-permissions -f "$2" -C "$1" 2>"$1.err"; s=$?; head -c 400 "$1.err" >&2; rm -f "$1.err"; exit $s; }',
      'restore',
      insideStaging,
      b.sandboxed ? ARCHIVE_INSIDE : mounted,
    ],
    { host: mounted, inside: ARCHIVE_INSIDE },
  );
  if (failedStep(extracted)) return 'the archive could not be extracted';
  const names = await readdir(staging);
  const unexpected = names.find((n) => !TOP.has(n));
  if (unexpected) return `an unexpected entry ${unexpected.slice(0, 100)}`;
  const walked = await walkTree(staging, names, job.maxBytes);
  if (typeof walked === 'string') return walked;
  // The package managers' caches next to the checkout; node_modules into it, unless the repository has its own.
  let movedModules = false;
  for (const name of names) {
    const dest = name === CACHE_DIR ? path.join(b.root, CACHE_DIR) : path.join(b.src, name);
    if (
      await lstat(dest).then(
        () => true,
        () => false,
      )
    )
      continue;
    await rename(path.join(staging, name), dest);
    if (name === 'node_modules') movedModules = true;
  }
  return { ...walked, movedModules };
}

/** The archive's names: under node_modules/ or cache/, never absolute, never through `..`. */
async function listingRefusal(file: string): Promise<string | undefined> {
  let out: string;
  try {
    out = (await promisify(execFile)('tar', ['-tf', file], { maxBuffer: 256 * 1024 * 1024, timeout: 120_000, env: { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8' } }))
      .stdout;
  } catch {
    return 'the archive is not readable (corrupt or truncated)';
  }
  for (const name of out.split('\n')) {
    if (!name) continue;
    const parts = name.split('/');
    if (name.startsWith('/') || parts.includes('..')) return `the archive names a path outside the build (${name.slice(0, 100)})`;
    if (!TOP.has(parts[0]!)) return `the archive holds more than node_modules and the package managers' caches (${name.slice(0, 100)})`;
  }
  return undefined;
}

/**
 * A tree of directories, regular files and links that stay inside their top-level directory (node_modules, cache),
 * nothing else; its archive's size (tar headers and blocks), refused past `maxBytes`. Links are read, never followed.
 */
async function walkTree(root: string, tops: readonly string[], maxBytes: number): Promise<string | { bytes: number; entries: string[] }> {
  let bytes = 0;
  const entries: string[] = [];
  const pending = tops.map((top) => path.join(root, top));
  while (pending.length) {
    const p = pending.pop()!;
    const st = await lstat(p);
    const rel = path.relative(root, p);
    bytes += TAR_BLOCK + (st.isFile() ? Math.ceil(st.size / TAR_BLOCK) * TAR_BLOCK : 0) + (rel.length > 99 ? 2 * TAR_BLOCK : 0);
    if (bytes > maxBytes) return `over BUILD_CACHE_MAX_MB (${mb(maxBytes)})`;
    entries.push(`${rel}\0${st.mode}\0${st.size}\0${st.mtimeMs}`);
    if (st.isDirectory()) for (const name of await readdir(p)) pending.push(path.join(p, name));
    else if (st.isSymbolicLink()) {
      const target = await readlink(p);
      const top = path.join(root, rel.split(path.sep)[0]!);
      const resolved = path.resolve(path.dirname(p), target);
      if (path.isAbsolute(target) || (resolved !== top && !resolved.startsWith(top + path.sep)))
        return `the link ${rel} points outside its tree (${target.slice(0, 100)})`;
    } else if (!st.isFile()) return `${rel} is neither a file, a directory nor a link`;
  }
  return { bytes, entries };
}

/** What a tree was, to tell whether a build changed what it restored: names, modes, sizes, times. */
const signature = (entries: string[]) => createHash('sha256').update(entries.sort().join('\n')).digest('hex');
/** The signature of what each build restored from its own branch's cache. */
const restoredTrees = new WeakMap<CacheBuild, string>();

/** 3. save, after a successful build: never throws, never fails the build. */
export async function saveBuildCache(job: BuildCacheJob, b: CacheBuild): Promise<void> {
  const saving = path.join(b.root, SAVING);
  const why = await saveTo(job, b, saving).catch((err: unknown) => `${(err as Error).message}`);
  await rm(saving, { force: true }).catch(() => undefined);
  if (typeof why === 'string') b.note(`build cache not saved: ${why}`);
  else b.note(`build cache ${why.unchanged ? 'unchanged' : 'saved'} (${mb(why.bytes)})`);
}

async function saveTo(job: BuildCacheJob, b: CacheBuild, saving: string): Promise<string | { bytes: number; unchanged?: boolean }> {
  if (await job.diskLow()) return "DATA_DIR's disk is low on space";
  await recordInstall(b);
  // What there is to keep, as the build left it (its processes are gone: the checks below cannot be raced).
  const parts: Array<{ dir: string; inside: string; name: string }> = [];
  for (const [dir, inside, name] of [
    [b.root, b.inside.root, CACHE_DIR],
    [b.src, b.inside.src, 'node_modules'],
  ] as const)
    if ((await lstat(path.join(dir, name)).catch(() => undefined))?.isDirectory()) parts.push({ dir, inside, name });
  if (!parts.length) return 'no node_modules and no package manager cache to keep';
  let bytes = 0;
  const entries: string[] = [];
  for (const p of parts) {
    const walked = await walkTree(p.dir, [p.name], job.maxBytes - bytes);
    if (typeof walked === 'string') return walked;
    bytes += walked.bytes;
    entries.push(...walked.entries);
  }
  const file = buildCacheFile(job.dir, job.projectId, job.branch);
  // The build left its branch's cache as it found it: the archive stays, marked as used.
  if (restoredTrees.get(b) === signature(entries) && (await isFile(file))) {
    const at = new Date(job.now());
    await utimes(file, at, at);
    return { bytes: (await lstat(file)).size, unchanged: true };
  }
  const insideSaving = path.join(b.inside.root, SAVING);
  const args = parts.flatMap((p) => ['-C', p.inside, p.name]);
  const archived = await b.run([
    '/bin/sh',
    '-c',
    'out="$1"; shift; tar -c -f "$out" "$@" 2>"$out.err"; s=$?; head -c 400 "$out.err" >&2; rm -f "$out.err"; exit $s',
    'save',
    insideSaving,
    ...args,
  ]);
  if (failedStep(archived)) return 'the archive could not be written';
  const st = await lstat(saving);
  if (!st.isFile()) return 'the archive is not a file';
  if (st.size > job.maxBytes) return `${mb(st.size)} is over BUILD_CACHE_MAX_MB (${mb(job.maxBytes)})`;
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    await copyFile(saving, tmp);
    // Readable by the build's user through the read-only mount of its restore step only (the directories are 0700).
    await chmod(tmp, 0o644);
    await rename(tmp, file);
  } finally {
    await rm(tmp, { force: true }).catch(() => undefined);
  }
  await evictBuildCaches(job.dir, job.totalBytes, file);
  return { bytes: st.size };
}

/**
 * cache/install-digest says what the build's node_modules was installed from (installDigest), rewritten only when it
 * changed (an unchanged tree stays "unchanged"), removed when there is no node_modules or no npm lockfile.
 */
async function recordInstall(b: CacheBuild): Promise<void> {
  // The build's processes are gone; a cache directory it replaced with a link (or a file) is left as it is.
  const dir = await lstat(path.join(b.root, CACHE_DIR)).catch(() => undefined);
  if (dir && !dir.isDirectory()) return;
  const file = path.join(b.root, CACHE_DIR, INSTALL_DIGEST);
  const modules = (await lstat(path.join(b.src, 'node_modules')).catch(() => undefined))?.isDirectory();
  const digest = modules ? await installDigest(b.src) : undefined;
  const current = await lstat(file).catch(() => undefined);
  if (!digest) {
    if (current) await rm(file, { force: true });
    return;
  }
  if (current?.isFile() && (await smallFile(file, 128))?.toString('utf8') === digest) return;
  await rm(file, { recursive: true, force: true });
  await mkdir(path.join(b.root, CACHE_DIR), { recursive: true, mode: 0o755 });
  await writeFile(file, digest, { mode: 0o644, flag: 'wx' });
}

/** A save's temporary copy older than this belongs to no save in flight (a build's time is bounded well below it). */
const STALE_SAVE_MS = 6 * 60 * 60 * 1000;

/** 4. evict: the least recently used archives go until all of them fit `totalBytes`; `keep` stays (and stale temporary copies go). */
export async function evictBuildCaches(dir: string, totalBytes: number, keep?: string): Promise<string[]> {
  const files: Array<{ file: string; size: number; used: number }> = [];
  for (const project of await readdir(dir).catch(() => [])) {
    for (const name of await readdir(path.join(dir, project)).catch(() => [])) {
      const file = path.join(dir, project, name);
      if (name.endsWith('.tmp')) {
        // Another build's save under way, or one a killed process left: gone once no save could still be writing it.
        const t = await stat(file).catch(() => undefined);
        if (t && Date.now() - t.mtimeMs > STALE_SAVE_MS) await rm(file, { force: true }).catch(() => undefined);
        continue;
      }
      if (name.endsWith('.skip')) {
        // A deploy queued with cache=false that no build took (canceled while queued, or lost).
        const t = await stat(file).catch(() => undefined);
        if (t && Date.now() - t.mtimeMs > STALE_SAVE_MS) await rm(file, { force: true }).catch(() => undefined);
        continue;
      }
      if (!name.endsWith('.tar')) continue;
      const st = await stat(file).catch(() => undefined);
      if (st?.isFile()) files.push({ file, size: st.size, used: st.mtimeMs });
    }
  }
  let total = files.reduce((n, f) => n + f.size, 0);
  const evicted: string[] = [];
  for (const f of files.sort((a, b) => a.used - b.used)) {
    if (total <= totalBytes) break;
    if (f.file === keep) continue;
    await rm(f.file, { force: true }).catch(() => undefined);
    total -= f.size;
    evicted.push(f.file);
  }
  return evicted;
}

async function isFile(file: string): Promise<boolean> {
  return (await lstat(file).catch(() => undefined))?.isFile() === true;
}
