import { existsSync } from 'node:fs';
import { mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * A build's cgroup: memory and process-count limits the kernel enforces on everything the build starts, its CPU
 * time, whether the kernel killed one of its processes for memory, and a list of every process still in it, so
 * none outlives the build (a `setsid` child included). Two kinds, tried in this order:
 *   v2  a delegated subtree (systemd `Delegate=yes`, or a container's own cgroup mounted read-write): under this
 *       process's cgroup, `service-builds/<deploy>` with `memory.max`, `memory.swap.max`, `pids.max`, read back
 *       through `memory.events` (oom_kill), `pids.events` and `cpu.stat`. The controllers are enabled through
 *       `cgroup.subtree_control`; a cgroup with processes cannot hand controllers down, so the processes of this
 *       process's cgroup are first moved into a leaf child, `service` (never at the hierarchy's real root);
 *   v1  the memory, pids and cpuacct hierarchies, each a directory under this process's own cgroup.
 * Where neither can be made, `createBuildCgroup` answers why, and the build fails `limits_unavailable` unless the
 * operator allowed builds without limits (BUILD_ALLOW_UNLIMITED; README, "Builds without limits").
 */
export interface BuildCgroupLimits {
  memoryBytes: number;
  pids: number;
}

export interface BuildCgroup {
  readonly version: 'v1' | 'v2';
  /** Directories whose cgroup.procs a process writes its pid to, to join (before it execs the build). */
  readonly dirs: string[];
  /** How many of the build's processes the kernel killed at the memory limit so far. */
  oomKills(): Promise<number>;
  /** Which limit the kernel enforced, if any: an OOM kill, or a fork refused at pids.max. */
  exceeded(): Promise<'memory_limit' | 'process_limit' | undefined>;
  /** CPU time used so far, in seconds (every process of the build, living and dead). */
  cpuSeconds(): Promise<number>;
  /** SIGKILL every process still in the cgroup, until none is left. */
  killAll(): Promise<void>;
  remove(): Promise<void>;
}

/** Where this process's cgroups are read from: the kernel's files, or (tests) a fake host's. */
export interface CgroupHost {
  /** /proc/self/cgroup: `id:controllers:path` per hierarchy, `0::path` for v2. */
  cgroupFile: string;
  /** /proc/self/mountinfo: where each hierarchy is mounted, and from which of its directories. */
  mountinfoFile: string;
}

export const THIS_HOST: CgroupHost = { cgroupFile: '/proc/self/cgroup', mountinfoFile: '/proc/self/mountinfo' };

export type CgroupOutcome = { ok: true; cgroup: BuildCgroup } | { ok: false; why: string };
export type CgroupProbe = { ok: true; version: 'v1' | 'v2'; dir: string } | { ok: false; why: string };

/** The directory, under this process's cgroup, that holds one group per build. */
const GROUP = 'service-builds';
/** v2: the leaf this process's cgroup's own processes move to, so the cgroup can hand controllers down. */
const LEAF = 'service';
const V1_CONTROLLERS = ['memory', 'pids', 'cpuacct'] as const;
const V2_CONTROLLERS = ['memory', 'pids'] as const;

export async function createBuildCgroup(name: string, limits: BuildCgroupLimits, host: CgroupHost = THIS_HOST): Promise<CgroupOutcome> {
  const lines = parseProcCgroup(await readFile(host.cgroupFile, 'utf8').catch(() => ''));
  const mounts = parseMountinfo(await readFile(host.mountinfoFile, 'utf8').catch(() => ''));
  const v2 = await createV2(name, limits, lines, mounts);
  if (v2.ok) return v2;
  const v1 = await createV1(name, limits, lines, mounts);
  if (v1.ok) return v1;
  return { ok: false, why: `${v2.why}; ${v1.why}` };
}

/** Whether builds can get their limits here: a group made and removed again (at start, for the start log). */
export async function probeBuildCgroups(host: CgroupHost = THIS_HOST): Promise<CgroupProbe> {
  const made = await createBuildCgroup(`probe-${process.pid}`, { memoryBytes: 64 * 1024 * 1024, pids: 8 }, host);
  if (!made.ok) return made;
  await made.cgroup.remove();
  return { ok: true, version: made.cgroup.version, dir: path.dirname(made.cgroup.dirs[0]!) };
}

interface Mount {
  /** The hierarchy's directory mounted here ("/" unless a container sees only its own part). */
  root: string;
  point: string;
  fstype: string;
  superOptions: string[];
}

interface ProcCgroupLine {
  controllers: string[];
  rel: string;
  v2: boolean;
}

/** mountinfo(5): `id parent dev root point options [optional...] - fstype source superoptions`. */
function parseMountinfo(text: string): Mount[] {
  const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8)));
  const mounts: Mount[] = [];
  for (const line of text.split('\n')) {
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const f = left.split(' ');
    const r = right.split(' ');
    if (f.length < 5) continue;
    mounts.push({ root: unescape(f[3]!), point: unescape(f[4]!), fstype: r[0] ?? '', superOptions: (r[2] ?? '').split(',') });
  }
  return mounts;
}

function parseProcCgroup(text: string): ProcCgroupLine[] {
  const out: ProcCgroupLine[] = [];
  for (const line of text.split('\n')) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line.trim());
    if (!m) continue;
    out.push({ controllers: m[2] ? m[2].split(',') : [], rel: m[3]!, v2: m[1] === '0' && m[2] === '' });
  }
  return out;
}

/** This process's directory in a mounted hierarchy: the mount point plus its path below the mount's root. */
function dirIn(mount: Mount, rel: string): string | undefined {
  if (mount.root === '/') return path.resolve(mount.point, `.${rel}`);
  if (rel === mount.root || rel.startsWith(`${mount.root}/`)) return path.resolve(mount.point, `.${rel.slice(mount.root.length)}`);
  return undefined;
}

const read = (file: string) => readFile(file, 'utf8').catch(() => '');
const words = (text: string) => text.split(/\s+/).filter(Boolean);
const pidsIn = async (dir: string) => words(await read(path.join(dir, 'cgroup.procs'))).map(Number);
const counter = (text: string, key: string) => Number(new RegExp(`^${key} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);

function failure(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'EACCES' || code === 'EPERM') return 'not writable by this user (not delegated to it)';
  if (code === 'EROFS') return 'mounted read-only';
  return code ?? (err as Error).message;
}

// v2 ----------------------------------------------------------------------------------------------------------------

async function createV2(name: string, limits: BuildCgroupLimits, lines: ProcCgroupLine[], mounts: Mount[]): Promise<CgroupOutcome> {
  const line = lines.find((l) => l.v2);
  const mount = mounts.find((m) => m.fstype === 'cgroup2');
  if (!mount || !line) return { ok: false, why: 'cgroup v2: not mounted' };
  const base = dirIn(mount, line.rel);
  if (!base || !existsSync(path.join(base, 'cgroup.controllers')))
    return { ok: false, why: `cgroup v2: this process's cgroup ${line.rel} is not visible under ${mount.point}` };
  const offered = words(await read(path.join(base, 'cgroup.controllers')));
  const missing = V2_CONTROLLERS.filter((c) => !offered.includes(c));
  if (missing.length)
    return {
      ok: false,
      why: `cgroup v2: ${base} is not given the ${missing.join(' and ')} controller${missing.length > 1 ? 's' : ''} (it has: ${offered.join(' ') || 'none'})`,
    };
  const groups = path.join(base, GROUP);
  const dir = path.join(groups, name);
  let step = base;
  try {
    await handDown(base, base === path.resolve(mount.point));
    step = groups;
    await mkdir(groups, { recursive: true });
    await handDown(groups, false);
    step = dir;
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, 'memory.max'), String(limits.memoryBytes));
    // No swap: a build cannot swap its way past the limit (absent when the kernel has no swap accounting).
    await writeFile(path.join(dir, 'memory.swap.max'), '0', { flag: 'r+' }).catch(() => undefined);
    await writeFile(path.join(dir, 'pids.max'), String(limits.pids));
  } catch (err) {
    await rmdir(dir).catch(() => undefined);
    return { ok: false, why: `cgroup v2: ${step}: ${failure(err)}` };
  }
  const file = (f: string) => path.join(dir, f);
  const cgroup: BuildCgroup = {
    version: 'v2',
    dirs: [dir],
    oomKills: async () => counter(await read(file('memory.events')), 'oom_kill') + counter(await read(file('memory.events')), 'oom_group_kill'),
    async exceeded() {
      if ((await this.oomKills()) > 0) return 'memory_limit';
      if (counter(await read(file('pids.events')), 'max') > 0) return 'process_limit';
      return undefined;
    },
    cpuSeconds: async () => counter(await read(file('cpu.stat')), 'usage_usec') / 1e6,
    async killAll() {
      // cgroup.kill (Linux 5.14) kills the whole group at once, forks in flight included; the loop covers older kernels.
      await writeFile(file('cgroup.kill'), '1', { flag: 'r+' }).catch(() => undefined);
      await killEach(() => pidsIn(dir));
    },
    remove: () => removeDirs([dir]),
  };
  return { ok: true, cgroup };
}

/**
 * Lets `dir`'s children have the memory and pids controllers. A cgroup other than the hierarchy's root cannot both
 * hold processes and hand controllers down, so its processes move into the leaf child first (at the mount point,
 * only when the kernel says it must: a container's namespace root; the real root is exempt and keeps its own).
 */
async function handDown(dir: string, isMountRoot: boolean): Promise<void> {
  const on = words(await read(path.join(dir, 'cgroup.subtree_control'))).map((w) => w.replace(/^\+/, ''));
  if (V2_CONTROLLERS.every((c) => on.includes(c))) return;
  const enable = () => writeFile(path.join(dir, 'cgroup.subtree_control'), V2_CONTROLLERS.map((c) => `+${c}`).join(' '));
  if (!isMountRoot && (await pidsIn(dir)).length) await moveToLeaf(dir);
  try {
    await enable();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EBUSY') throw err;
    await moveToLeaf(dir);
    await enable();
  }
}

async function moveToLeaf(dir: string): Promise<void> {
  const leaf = path.join(dir, LEAF);
  await mkdir(leaf, { recursive: true });
  // One pid per write, as the kernel takes them; a process that exited meanwhile is skipped.
  for (const pid of await pidsIn(dir)) await writeFile(path.join(leaf, 'cgroup.procs'), String(pid)).catch(() => undefined);
}

// v1 ----------------------------------------------------------------------------------------------------------------

async function createV1(name: string, limits: BuildCgroupLimits, lines: ProcCgroupLine[], mounts: Mount[]): Promise<CgroupOutcome> {
  const dirs: Record<(typeof V1_CONTROLLERS)[number], string> = { memory: '', pids: '', cpuacct: '' };
  for (const c of V1_CONTROLLERS) {
    const line = lines.find((l) => l.controllers.includes(c));
    const mount = mounts.find((m) => m.fstype === 'cgroup' && m.superOptions.includes(c));
    if (!line || !mount) return { ok: false, why: `cgroup v1: no ${c} hierarchy mounted` };
    const own = dirIn(mount, line.rel);
    if (!own || !existsSync(path.join(own, 'cgroup.procs')))
      return { ok: false, why: `cgroup v1: this process's ${c} cgroup ${line.rel} is not visible under ${mount.point}` };
    dirs[c] = path.join(own, GROUP, name);
  }
  let step = '';
  try {
    for (const c of V1_CONTROLLERS) {
      step = dirs[c];
      await mkdir(dirs[c], { recursive: true });
    }
    step = dirs.memory;
    await writeFile(path.join(dirs.memory, 'memory.limit_in_bytes'), String(limits.memoryBytes));
    // With swap accounting, swap counts too (else a build could swap its way past the limit).
    await writeFile(path.join(dirs.memory, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes)).catch(() => undefined);
    step = dirs.pids;
    await writeFile(path.join(dirs.pids, 'pids.max'), String(limits.pids));
  } catch (err) {
    for (const d of Object.values(dirs)) await rmdir(d).catch(() => undefined);
    return { ok: false, why: `cgroup v1: ${step}: ${failure(err)}` };
  }
  const procs = async () => [...new Set((await Promise.all(Object.values(dirs).map(pidsIn))).flat())];
  const cgroup: BuildCgroup = {
    version: 'v1',
    dirs: Object.values(dirs),
    // memory.oom_control's oom_kill counter (Linux 4.13).
    oomKills: async () => counter(await read(path.join(dirs.memory, 'memory.oom_control')), 'oom_kill'),
    async exceeded() {
      if ((await this.oomKills()) > 0) return 'memory_limit';
      // Kernels without the counter: the limit was hit, and usage stood at it.
      const failcnt = Number((await read(path.join(dirs.memory, 'memory.failcnt'))).trim() || 0);
      const max = Number((await read(path.join(dirs.memory, 'memory.max_usage_in_bytes'))).trim() || 0);
      if (failcnt > 0 && max >= limits.memoryBytes * 0.98) return 'memory_limit';
      if (counter(await read(path.join(dirs.pids, 'pids.events')), 'max') > 0) return 'process_limit';
      return undefined;
    },
    cpuSeconds: async () => Number((await read(path.join(dirs.cpuacct, 'cpuacct.usage'))).trim() || 0) / 1e9,
    killAll: () => killEach(procs),
    remove: () => removeDirs(Object.values(dirs)),
  };
  return { ok: true, cgroup };
}

// both --------------------------------------------------------------------------------------------------------------

async function killEach(procs: () => Promise<number[]>): Promise<void> {
  for (let round = 0; round < 50; round++) {
    const pids = await procs();
    if (!pids.length) return;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** rmdir each, retrying while the kernel still counts a dying process in it (EBUSY). */
async function removeDirs(dirs: string[]): Promise<void> {
  for (const d of dirs) {
    for (let i = 0; i < 50; i++) {
      const code = await rmdir(d).then(
        () => undefined,
        (err: NodeJS.ErrnoException) => err.code,
      );
      if (code !== 'EBUSY') break;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}
