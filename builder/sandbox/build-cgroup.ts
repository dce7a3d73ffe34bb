import { existsSync } from 'node:fs';
import { mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * A build's cgroup (v1: the memory, pids and cpuacct controllers, each a directory under this process's own
 * cgroup): memory and process-count limits the kernel enforces on everything the build starts, CPU time read
 * from cpuacct, and a list of every process still in it, so none outlives the build (a `setsid` child included).
 * Where the controllers are missing or not writable, `createBuildCgroup` answers undefined and the build falls
 * back to rlimits (README, "Builds").
 */
export interface BuildCgroupLimits {
  memoryBytes: number;
  pids: number;
}

export interface BuildCgroup {
  /** Directories whose cgroup.procs a process writes its pid to, to join (before it execs the build). */
  readonly dirs: string[];
  /** Which limit the kernel enforced, if any: an OOM kill, or a fork refused at pids.max. */
  exceeded(): Promise<'memory_limit' | 'process_limit' | undefined>;
  /** CPU time used so far, in seconds (every process of the build, living and dead). */
  cpuSeconds(): Promise<number>;
  /** SIGKILL every process still in the cgroup, until none is left. */
  killAll(): Promise<void>;
  remove(): Promise<void>;
}

const CONTROLLERS = ['memory', 'pids', 'cpuacct'] as const;
const ROOT = '/sys/fs/cgroup';

/** This process's cgroup directory of a v1 controller, or undefined. */
async function ownDir(controller: string): Promise<string | undefined> {
  const lines = (await readFile('/proc/self/cgroup', 'utf8').catch(() => '')).split('\n');
  for (const line of lines) {
    const [, list, rel] = line.split(':');
    if (list === undefined || rel === undefined) continue;
    if (list.split(',').includes(controller)) {
      for (const mount of [path.join(ROOT, controller), path.join(ROOT, list)]) if (existsSync(path.join(mount, 'cgroup.procs'))) return path.join(mount, rel);
    }
  }
  return undefined;
}

export async function createBuildCgroup(name: string, limits: BuildCgroupLimits): Promise<BuildCgroup | undefined> {
  const dirs: Record<(typeof CONTROLLERS)[number], string> = { memory: '', pids: '', cpuacct: '' };
  try {
    for (const c of CONTROLLERS) {
      const own = await ownDir(c);
      if (!own) return undefined;
      dirs[c] = path.join(own, 'service-builds', name);
      await mkdir(dirs[c], { recursive: true });
    }
    await writeFile(path.join(dirs.memory, 'memory.limit_in_bytes'), String(limits.memoryBytes));
    // With swap accounting, swap counts too (else a build could swap its way past the limit).
    await writeFile(path.join(dirs.memory, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes)).catch(() => undefined);
    await writeFile(path.join(dirs.pids, 'pids.max'), String(limits.pids));
  } catch {
    for (const d of Object.values(dirs)) if (d) await rmdir(d).catch(() => undefined);
    return undefined;
  }
  const read = (file: string) => readFile(file, 'utf8').catch(() => '');
  const procs = async () => {
    const all = new Set<number>();
    for (const d of Object.values(dirs)) for (const l of (await read(path.join(d, 'cgroup.procs'))).split('\n')) if (l.trim()) all.add(Number(l));
    return [...all];
  };
  return {
    dirs: Object.values(dirs),
    async exceeded() {
      const oom = /oom_kill (\d+)/.exec(await read(path.join(dirs.memory, 'memory.oom_control')));
      if (oom && Number(oom[1]) > 0) return 'memory_limit';
      const failcnt = Number((await read(path.join(dirs.memory, 'memory.failcnt'))).trim() || 0);
      const max = Number((await read(path.join(dirs.memory, 'memory.max_usage_in_bytes'))).trim() || 0);
      if (failcnt > 0 && max >= limits.memoryBytes * 0.98) return 'memory_limit';
      const pidsEvents = /max (\d+)/.exec(await read(path.join(dirs.pids, 'pids.events')));
      if (pidsEvents && Number(pidsEvents[1]) > 0) return 'process_limit';
      return undefined;
    },
    async cpuSeconds() {
      return Number((await read(path.join(dirs.cpuacct, 'cpuacct.usage'))).trim() || 0) / 1e9;
    },
    async killAll() {
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
    },
    async remove() {
      for (const d of Object.values(dirs)) {
        for (let i = 0; i < 50; i++) {
          if (
            await rmdir(d).then(
              () => true,
              () => false,
            )
          )
            break;
          await new Promise((r) => setTimeout(r, 20));
        }
      }
    },
  };
}
