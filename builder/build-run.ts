import { execFile } from 'node:child_process';
import { chmod, lstat, mkdir, open, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { ArtifactLimits, DeployFailureReason } from '../schemas/deploys.ts';
import type { OutboundUrlGuard } from '../platform/ports/outbound-url-guard.ts';
import type { BuildLog } from './build-log.ts';
import type { CloneAuth } from './github-checkout.ts';
import type { DeployCommit } from '../domain/deploys/suspect-commits.ts';
import { COMMIT_BOUNDS, readCommits } from './commits/read-commits.ts';
import { copyArtifact, type CopyArtifactOptions } from './artifact-copy.ts';
import { gitShaVariables } from './build-variables.ts';
import { buildDefaults } from './frameworks/framework-of-checkout.ts';
import { buildCacheEnv, restoreBuildCache, saveBuildCache, type BuildCacheJob, type CacheBuild } from './build-cache/build-cache.ts';
import { createBuildCgroup, type BuildCgroup, type CgroupHost } from './sandbox/build-cgroup.ts';
import { runStep, type StepResult } from './sandbox/build-process.ts';
import { startEgressProxy, type EgressProxy } from './sandbox/egress-proxy.ts';
import { INSIDE, prepareSandboxRoot, proxyEnv, sandboxArgv, type SandboxSpec } from './sandbox/sandbox.ts';

/**
 * One build, a tenant's code run as a stranger's (README, "Tenants are strangers"):
 *   1. prepare   a cgroup with its memory and process limits (none can be made: the build fails limits_unavailable,
 *                unless BUILD_ALLOW_UNLIMITED, which every build log warns of), a directory of its own under
 *                BUILD_DIR, the egress proxy on a Unix socket (BUILD_NETWORK=proxy), and for a local repository a git
 *                bundle of the branch
 *   2. checkout  `git clone --depth 51 --branch` inside the sandbox (sandbox/sandbox.ts), through the proxy; the commits
 *                since the previous production deploy read from it before the build command can touch it (commits/)
 *   3. build     the build command with `sh -c` inside the sandbox, with a clean environment: the project's build
 *                variables and the system ones (build-variables.ts: CX_*, VITE_CX_*, CX_GIT_SHA added here) and
 *                SERVICE_DEPLOY_ID, SERVICE_GIT_SHA, SERVICE_ENVIRONMENT, never the service's own. A command or output
 *                directory the settings leave unset is the detected framework's (frameworks/), said in the log
 *   4. artifact  the output directory copied out: regular files inside it only, within the artifact limits
 *                (artifact-copy.ts)
 * The wall-clock limit, a cancel, or a resource limit (memory, processes, CPU, disk) ends the step and every
 * process it started (sandbox/build-process.ts). With BUILD_SANDBOX=off the same steps run as plain processes
 * (single-tenant machines only; every build log says so).
 */
export interface BuildJob {
  deployId: string;
  branch: string;
  environment: 'production' | 'preview';
  repoUrl: string;
  /** A GitHub installation token's header for the clone step only (github-checkout.ts), never the build's. */
  cloneAuth?: CloneAuth;
  buildCommand: string;
  outputDir: string;
  env: Record<string, string>;
  /** The build's own directory (removed afterwards) and where the artifact is kept. */
  workDir: string;
  artifactDir: string;
  timeoutMs: number;
  log: BuildLog;
  onSha(sha: string): Promise<void>;
  /** The framework detected for a command or output directory the settings leave unset (frameworks/). */
  onFramework?(framework: string): Promise<void>;
  /** The commits since `commitsSince` (the previous production deploy's sha), read after the checkout (commits/). */
  onCommits?(commits: DeployCommit[]): Promise<void>;
  commitsSince?: string | null;
  signal?: AbortSignal;
  isolation: BuildIsolation;
  /** What the output may take of its project's and account's quotas and of DATA_DIR's disk (output-quota.ts). */
  room?: CopyArtifactOptions['room'];
  /** The project's and branch's build cache (build-cache/): restored before the build command, saved after success. */
  cache?: BuildCacheJob;
}

export interface BuildIsolation {
  sandbox: boolean;
  network: 'proxy' | 'none';
  uid: number;
  memoryBytes: number;
  pids: number;
  cpuSeconds: number;
  diskBytes: number;
  tmpBytes: number;
  /** BUILD_ALLOW_UNLIMITED: where no cgroup can be made, run the build without memory or process limits. */
  allowUnlimited?: boolean;
  /** Where the build's cgroup is made (tests: a fake host; build-cgroup.ts). */
  cgroupHost?: CgroupHost;
  artifact: ArtifactLimits;
  /** The sandbox's relay to the egress proxy (sandbox.ts); tests run both. */
  relay?: 'auto' | 'node';
  /** What the egress proxy admits (ports/outbound-url-guard.ts, use build_egress). */
  guard: OutboundUrlGuard;
}

export type BuildOutcome = { ok: true; gitSha: string; files: number; bytes: number } | { ok: false; reason: DeployFailureReason; exitCode?: number };

/** The build log's line for a build refused because its limits cannot be enforced (README, "Builds without limits"). */
export const LIMITS_UNAVAILABLE_LINE =
  'the build did not run: this builder cannot enforce memory and process limits (no usable cgroup v2 subtree or v1 hierarchy). Delegate a cgroup to the service (README, "Builds without limits"), or set BUILD_ALLOW_UNLIMITED=true on a single-tenant machine';
/** The build log's warning for a build that runs without limits because the operator allowed it. */
export const UNLIMITED_BUILD_LINE =
  'WARNING: this build runs without memory or process limits (BUILD_ALLOW_UNLIMITED=true; CPU time is limited per process only)';

/** What a build sees of the host's environment: a PATH and a locale, nothing of the service's configuration. */
const BASE_ENV = { PATH: '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8', CI: '1' };
const SHA_FILE = '.checkout-sha';
const CLONE_CA_FILE = '.clone-ca.pem';

export async function runBuild(job: BuildJob): Promise<BuildOutcome> {
  const iso = job.isolation;
  const started = Date.now();
  const left = () => job.timeoutMs - (Date.now() - started);
  await rm(job.workDir, { recursive: true, force: true });
  await mkdir(job.workDir, { recursive: true });
  let cgroup: BuildCgroup | undefined;
  let proxy: EgressProxy | undefined;
  try {
    // 1. prepare
    if (!iso.sandbox)
      job.log.line('system', "WARNING: this build is not sandboxed (BUILD_SANDBOX=off): it runs as the service's user and can read what the service can");
    const made = await createBuildCgroup(job.deployId, { memoryBytes: iso.memoryBytes, pids: iso.pids }, iso.cgroupHost);
    if (made.ok) cgroup = made.cgroup;
    else if (!iso.allowUnlimited) {
      job.log.line('system', `${LIMITS_UNAVAILABLE_LINE} (${made.why})`);
      return { ok: false, reason: 'limits_unavailable' };
    } else job.log.line('system', `${UNLIMITED_BUILD_LINE} (${made.why})`);
    const { root, etcDir, initScript } = await prepareSandboxRoot(job.workDir, iso.uid);
    const src = path.join(root, 'src');
    if (iso.sandbox && iso.network === 'proxy') {
      proxy = await startEgressProxy({
        socketPath: path.join(job.workDir, 'egress.sock'),
        guard: iso.guard,
        onRefused: (dest, why) => job.log.line('system', `network: refused ${dest}: ${why}`),
      });
    }
    const spec: SandboxSpec = { uid: iso.uid, root, mounts: [], egressSocket: proxy?.socketPath, tmpBytes: iso.tmpBytes, etcDir, initScript, relay: iso.relay };
    const local = job.repoUrl.startsWith('/') || job.repoUrl.startsWith('file://');
    let source = job.repoUrl;
    if (iso.sandbox && local) {
      // The sandbox sees no host path: a local repository's branch comes in as a bundle, read-only.
      const bundle = path.join(job.workDir, 'source.bundle');
      const made = await promisify(execFile)('git', ['-C', job.repoUrl.replace(/^file:\/\//, ''), 'bundle', 'create', bundle, `refs/heads/${job.branch}`], {
        env: { ...BASE_ENV, GIT_CONFIG_NOSYSTEM: '1', HOME: job.workDir },
      }).then(
        () => true,
        () => false,
      );
      if (!made) {
        job.log.line('system', `checking out ${job.branch}`);
        job.log.line('system', `the branch ${job.branch} was not found in the repository`);
        return { ok: false, reason: 'checkout_failed' };
      }
      await chmod(bundle, 0o644);
      spec.mounts.push({ host: bundle, inside: INSIDE.bundle });
      source = INSIDE.bundle;
    }
    const inBuild = iso.sandbox ? { root: INSIDE.root, src: INSIDE.src, home: INSIDE.home } : { root, src, home: path.join(root, 'home') };
    const netEnv = iso.sandbox && proxy ? proxyEnv() : {};
    // A step that needs no network (a local repository's checkout) gets no relay and no socket.
    const step = (argv: string[], cwd: string, env: Record<string, string>, network = true, mount?: SandboxSpec['mounts'][number]): Promise<StepResult> =>
      runStep({
        argv: iso.sandbox
          ? sandboxArgv({ ...spec, egressSocket: network ? spec.egressSocket : undefined, mounts: mount ? [...spec.mounts, mount] : spec.mounts }, argv, cwd)
          : argv,
        cwd: iso.sandbox ? job.workDir : cwd,
        env,
        log: job.log,
        timeoutMs: left(),
        signal: job.signal,
        cgroup,
        limits: { cpuSeconds: iso.cpuSeconds, diskBytes: iso.diskBytes },
        diskUsage: () => diskUsage(root, iso.diskBytes),
      });
    const failed = (r: StepResult, otherwise: DeployFailureReason): BuildOutcome | undefined => {
      if (r.timedOut) {
        job.log.line('system', `build stopped after ${Math.round(job.timeoutMs / 1000)} s (the limit)`);
        return { ok: false, reason: 'timeout' };
      }
      if (r.limit) {
        job.log.line('system', `build stopped: ${LIMIT_MESSAGES[r.limit](iso)}`);
        return { ok: false, reason: r.limit };
      }
      if (r.aborted) return { ok: false, reason: otherwise };
      if (r.exitCode !== 0) {
        if (otherwise === 'build_failed') job.log.line('system', `build failed with exit code ${r.exitCode ?? `signal ${r.signal}`}`);
        return { ok: false, reason: otherwise, exitCode: r.exitCode ?? undefined };
      }
      return undefined;
    };

    // 2. checkout
    job.log.line('system', `checking out ${job.branch}`);
    const gitEnv = {
      ...BASE_ENV,
      ...(local ? {} : netEnv),
      HOME: inBuild.home,
      GIT_TERMINAL_PROMPT: '0',
      GIT_CONFIG_NOSYSTEM: '1',
      // Configuration from the environment is git's for this process only: nothing of it lands in .git/config.
      ...(job.cloneAuth ? { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: `http.${job.cloneAuth.url}.extraHeader`, GIT_CONFIG_VALUE_0: job.cloneAuth.header } : {}),
    };
    if (job.cloneAuth && iso.guard.extraCa) {
      // The outbound guard's extra CA (a test's self-signed GitHub stand-in; no configuration sets one) is the clone's too.
      await writeFile(path.join(root, CLONE_CA_FILE), iso.guard.extraCa, { mode: 0o644 });
      Object.assign(gitEnv, { GIT_SSL_CAINFO: path.join(inBuild.root, CLONE_CA_FILE) });
    }
    const clone = await step(
      [
        '/bin/sh',
        '-c',
        'git -c core.hooksPath=/dev/null clone --quiet --depth "$5" --single-branch --branch "$1" -- "$2" "$3" && git -C "$3" rev-parse HEAD > "$4"',
        'checkout',
        job.branch,
        source,
        inBuild.src,
        path.join(inBuild.root, SHA_FILE),
        // History enough for the deploy's commits (at most COMMIT_BOUNDS.maxCommits, and the previous deploy's).
        String(COMMIT_BOUNDS.maxCommits + 1),
      ],
      inBuild.root,
      gitEnv,
      !local,
    );
    const cloneFailed = failed(clone, 'checkout_failed');
    if (cloneFailed) return cloneFailed;
    const sha = await readSmallFile(path.join(root, SHA_FILE));
    if (!/^[0-9a-f]{40,64}$/.test(sha)) return { ok: false, reason: 'checkout_failed' };
    await job.onSha(sha);
    job.log.line('system', `checked out ${sha}`);
    if (job.onCommits) {
      const read = await readCommits(src, job.commitsSince ?? null);
      if (read.ok) await job.onCommits(read.commits);
      else job.log.line('system', `the deploy's commits could not be read (${read.reason}); the build goes on without them`);
    }

    // 3. build (the build cache restored first, build-cache/)
    const cacheBuild: CacheBuild = {
      root,
      src,
      scratch: job.workDir,
      sandboxed: iso.sandbox,
      inside: inBuild,
      run: (argv, mount) => step(argv, inBuild.root, { ...BASE_ENV, HOME: inBuild.home }, false, mount),
      note: (t) => job.log.line('system', t),
    };
    const restored = job.cache ? await restoreBuildCache(job.cache, cacheBuild) : undefined;
    const { buildCommand, outputDir, framework } = await buildDefaults(job, src, (t) => job.log.line('system', t), restored);
    if (framework) await job.onFramework?.(framework);
    if (buildCommand.trim()) {
      job.log.line('system', `running: ${buildCommand}`);
      const env = {
        ...BASE_ENV,
        ...netEnv,
        HOME: inBuild.home,
        ...(job.cache ? buildCacheEnv(inBuild.root) : {}),
        ...job.env,
        ...gitShaVariables(sha),
        SERVICE_DEPLOY_ID: job.deployId,
        SERVICE_GIT_SHA: sha,
        SERVICE_ENVIRONMENT: job.environment,
      };
      const build = await step(['/bin/sh', '-c', buildCommand], inBuild.src, env);
      const buildFailed = failed(build, 'build_failed');
      if (buildFailed) return buildFailed;
    }

    // 4. artifact
    const copied = await copyArtifact({
      checkout: src,
      outputDir,
      dest: job.artifactDir,
      limits: iso.artifact,
      note: (t) => job.log.line('system', t),
      room: job.room,
    });
    if (!copied.ok) {
      job.log.line('system', copied.message);
      await rm(job.artifactDir, { recursive: true, force: true });
      return { ok: false, reason: copied.reason };
    }
    job.log.line('system', `build ready: ${copied.files} files, ${copied.bytes} bytes`);
    if (job.cache) await saveBuildCache(job.cache, cacheBuild);
    return { ok: true, gitSha: sha, files: copied.files, bytes: copied.bytes };
  } finally {
    await cgroup?.killAll();
    await proxy?.close().catch(() => undefined);
    await cgroup?.remove();
    await rm(job.workDir, { recursive: true, force: true }).catch(() => undefined);
  }
}

const mb = (b: number) => `${Math.round(b / 1024 / 1024)} MB`;
const LIMIT_MESSAGES: Record<NonNullable<StepResult['limit']>, (iso: BuildIsolation) => string> = {
  memory_limit: (iso) => `it used more than ${mb(iso.memoryBytes)} of memory (BUILD_MEMORY_MB)`,
  process_limit: (iso) => `it tried to run more than ${iso.pids} processes at once (BUILD_PIDS)`,
  cpu_limit: (iso) => `it used more than ${iso.cpuSeconds} s of CPU time (BUILD_CPU_SECONDS)`,
  disk_limit: (iso) => `it wrote more than ${mb(iso.diskBytes)} (BUILD_DISK_MB)`,
};

/** A file the checkout step wrote (never followed if it is a link, never read past 1 KB). */
async function readSmallFile(file: string): Promise<string> {
  try {
    if (!(await lstat(file)).isFile()) return '';
    const h = await open(file, 'r');
    try {
      const buf = Buffer.alloc(1024);
      const { bytesRead } = await h.read(buf, 0, buf.length, 0);
      return buf.subarray(0, bytesRead).toString('utf8').trim();
    } finally {
      await h.close();
    }
  } catch {
    return '';
  }
}

/** Bytes under dir (allocated blocks, links not followed), without recursion; stops counting past `stopAt`. */
export async function diskUsage(dir: string, stopAt = Infinity): Promise<number> {
  let total = 0;
  const pending = [dir];
  while (pending.length && total <= stopAt) {
    const d = pending.pop()!;
    const entries = await readdir(d, { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) pending.push(p);
      const st = await lstat(p).catch(() => undefined);
      if (st) total += st.blocks * 512;
    }
  }
  return total;
}
