import { spawn } from 'node:child_process';
import type { BuildLog } from '../build-log.ts';
import type { BuildCgroup } from './build-cgroup.ts';

/**
 * One step of a build (checkout or build command) as a child process the builder can always end:
 * - it runs in a process group of its own and in the build's cgroup, which it joins before exec (so nothing it forks
 *   escapes the count); without one only where the operator allowed builds without limits (BUILD_ALLOW_UNLIMITED);
 * - a time limit, a cancel or a resource limit kills the group, every process of the cgroup, and (sandboxed) the
 *   sandbox, whose PID namespace takes every descendant with it, `setsid` and double forks included;
 * - a step any of whose processes the kernel killed at the memory limit ends `memory_limit`, whatever its exit code;
 * - the step is over when its first process exits: output still held by a stray child's copy of the pipe is
 *   read for at most PIPE_GRACE_MS and then the pipe is closed, so no child can hold the builder.
 */
export interface StepLimits {
  /** CPU seconds for the whole build (cgroup cpuacct, checked every WATCH_MS). */
  cpuSeconds: number;
  /** Bytes the build may write under its directory (checked every WATCH_MS). */
  diskBytes: number;
}

export type StepLimit = 'memory_limit' | 'process_limit' | 'cpu_limit' | 'disk_limit';

export interface StepResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  aborted: boolean;
  /** A resource limit the step ran into (it was killed, or the kernel refused it). */
  limit?: StepLimit;
}

export interface StepOptions {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
  log: BuildLog;
  /** Milliseconds left of the build's wall-clock limit. */
  timeoutMs: number;
  signal?: AbortSignal;
  cgroup?: BuildCgroup;
  limits: StepLimits;
  /** Bytes written so far under the build's directory (the disk limit's measure). */
  diskUsage(): Promise<number>;
}

const PIPE_GRACE_MS = 300;
const WATCH_MS = 1_000;
const DISK_WATCH_MIN_MS = 2_000;

/**
 * The prefix that moves the step into the cgroup, then applies the rlimit fallbacks, then execs the step. The CPU
 * rlimit's soft limit sends SIGXCPU (which says why); the hard one, a second later, SIGKILL for a process that
 * ignores it. Equal limits would SIGKILL at once, and the kernel's tick-sampled per-process time can reach the limit
 * before the cgroup's exact count does, leaving a plain `build_failed`.
 */
function joinPrefix(o: StepOptions): string[] {
  const script =
    'while [ "$1" != "--" ]; do echo $$ > "$1/cgroup.procs" || exit 125; shift; done; shift; ulimit -S -t "$CPU_LIMIT_SECONDS" 2>/dev/null; ulimit -H -t "$((CPU_LIMIT_SECONDS + 1))" 2>/dev/null; unset CPU_LIMIT_SECONDS; exec "$@"';
  return ['/bin/sh', '-c', script, 'join', ...(o.cgroup?.dirs ?? []), '--'];
}

export function runStep(o: StepOptions): Promise<StepResult> {
  return new Promise((resolve) => {
    const [cmd, ...args] = [...joinPrefix(o), ...o.argv];
    // CPU_LIMIT_SECONDS is read (and unset) by the prefix: the step sees exactly o.env.
    const child = spawn(cmd!, args, {
      cwd: o.cwd,
      env: { ...o.env, CPU_LIMIT_SECONDS: String(Math.ceil(o.limits.cpuSeconds)) },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const result: StepResult = { exitCode: null, signal: null, timedOut: false, aborted: false };
    let ended = false;
    let exited = false;
    const kill = (): Promise<void> => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
      return o.cgroup?.killAll() ?? Promise.resolve();
    };
    const timer = setTimeout(
      () => {
        result.timedOut = true;
        void kill();
      },
      Math.max(1, o.timeoutMs),
    );
    const onAbort = () => {
      result.aborted = true;
      void kill();
    };
    if (o.signal?.aborted) onAbort();
    o.signal?.addEventListener('abort', onAbort, { once: true });
    let watching = false;
    // Measuring the disk walks the build's tree: it runs at most every DISK_WATCH_MIN_MS, and never takes more than a
    // tenth of the builder's time (a tree of 100k files is walked less often).
    let nextDiskCheck = 0;
    const watch = setInterval(() => {
      if (watching || ended) return;
      watching = true;
      void (async () => {
        const cpu = (await o.cgroup?.cpuSeconds()) ?? 0;
        if (cpu > o.limits.cpuSeconds) result.limit ??= 'cpu_limit';
        else if (Date.now() >= nextDiskCheck) {
          const t0 = Date.now();
          const used = await o.diskUsage();
          nextDiskCheck = Date.now() + Math.max(DISK_WATCH_MIN_MS, 10 * (Date.now() - t0));
          if (used > o.limits.diskBytes) result.limit ??= 'disk_limit';
        }
        if (result.limit) await kill();
      })().finally(() => (watching = false));
    }, WATCH_MS);
    child.stdout.setEncoding('utf8').on('data', (c: string) => o.log.write('stdout', c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => o.log.write('stderr', c));
    child.on('error', (err) => o.log.line('system', `could not start ${cmd}: ${err.message}`));
    let streamsOpen = 2;
    const finish = async () => {
      if (ended) return;
      ended = true;
      clearTimeout(timer);
      clearInterval(watch);
      o.signal?.removeEventListener('abort', onAbort);
      // Whatever the step left running goes with it, before the next step joins the same cgroup.
      await kill();
      // A process of the build the kernel killed at the memory limit fails the build, even when the step exited 0
      // (`node hog.js || true`): its output cannot be trusted. A step that failed is told why when a limit explains
      // it: the kernel killed it for memory, refused it a fork, or it ran out of CPU time (the rlimit fallback ends
      // in SIGXCPU). Otherwise a step that succeeded succeeded, even if it brushed a limit on the way (page cache
      // reclaimed at the memory limit, a fork retried).
      const succeeded = result.exitCode === 0 && !result.timedOut && !result.aborted;
      if (!result.limit && o.cgroup && (await o.cgroup.oomKills()) > 0) result.limit = 'memory_limit';
      if (!result.limit && !succeeded && o.cgroup) result.limit = await o.cgroup.exceeded();
      if (
        !result.limit &&
        !succeeded &&
        (result.signal === 'SIGXCPU' || result.exitCode === 128 + 24 || ((await o.cgroup?.cpuSeconds()) ?? 0) > o.limits.cpuSeconds)
      )
        result.limit = 'cpu_limit';
      resolve(result);
    };
    const streamEnded = () => {
      if (--streamsOpen === 0 && exited) void finish();
    };
    child.stdout.on('close', streamEnded);
    child.stderr.on('close', streamEnded);
    child.on('exit', (code, signal) => {
      exited = true;
      result.exitCode = code;
      result.signal = signal;
      if (streamsOpen === 0) return void finish();
      // A stray child may still hold the pipes: read what is there, then stop listening.
      setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
        void finish();
      }, PIPE_GRACE_MS).unref();
    });
  });
}
