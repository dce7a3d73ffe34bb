import { spawn } from 'node:child_process';
import { cp, mkdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { DeployFailureReason } from '../schemas/deploys.ts';
import type { BuildLog } from './build-log.ts';

/**
 * One build, as plain child processes (a multi-tenant production runs builders in a sandbox, a container or
 * a VM per build; see the README):
 *   1. check out the branch's head into a fresh work tree (`git clone --depth 1 --branch`), record the sha
 *   2. run the build command with `sh -c` in that tree, in a process group of its own, with a clean
 *      environment: the project's build variables and SERVICE_DEPLOY_ID, SERVICE_GIT_SHA,
 *      SERVICE_ENVIRONMENT, never the service's own variables (DATABASE_URL, ...)
 *   3. keep the output directory as the deploy's artifact
 * A wall-clock limit (or a cancel) kills the whole process group. Every output line goes to the build log.
 */
export interface BuildJob {
  deployId: string;
  branch: string;
  environment: 'production' | 'preview';
  repoUrl: string;
  buildCommand: string;
  outputDir: string;
  env: Record<string, string>;
  /** Where the work tree goes (removed afterwards) and where the artifact is kept. */
  workDir: string;
  artifactDir: string;
  timeoutMs: number;
  log: BuildLog;
  onSha(sha: string): Promise<void>;
  signal?: AbortSignal;
}

export type BuildOutcome = { ok: true; gitSha: string } | { ok: false; reason: DeployFailureReason; exitCode?: number };

/** What a build sees of the host: enough to find its tools, nothing of the service's configuration. */
const BASE_ENV = { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8', CI: '1' };

export async function runBuild(job: BuildJob): Promise<BuildOutcome> {
  const tree = path.join(job.workDir, 'src');
  await rm(job.workDir, { recursive: true, force: true });
  await mkdir(job.workDir, { recursive: true });
  try {
    // 1. checkout
    job.log.line('system', `checking out ${job.branch}`);
    const gitEnv = { ...BASE_ENV, HOME: job.workDir, GIT_TERMINAL_PROMPT: '0', GIT_CONFIG_NOSYSTEM: '1' };
    const clone = await run('git', ['-c', 'core.hooksPath=/dev/null', 'clone', '--quiet', '--depth', '1', '--single-branch', '--branch', job.branch, '--', job.repoUrl, tree], { cwd: job.workDir, env: gitEnv, log: job.log, timeoutMs: job.timeoutMs, signal: job.signal });
    if (clone.exitCode !== 0) return { ok: false, reason: clone.timedOut ? 'timeout' : 'checkout_failed', exitCode: clone.exitCode ?? undefined };
    const sha = (await capture('git', ['rev-parse', 'HEAD'], { cwd: tree, env: gitEnv })).trim();
    await job.onSha(sha);
    job.log.line('system', `checked out ${sha}`);

    // 2. build
    if (job.buildCommand.trim()) {
      job.log.line('system', `running: ${job.buildCommand}`);
      const env = { ...BASE_ENV, HOME: job.workDir, ...job.env, SERVICE_DEPLOY_ID: job.deployId, SERVICE_GIT_SHA: sha, SERVICE_ENVIRONMENT: job.environment };
      const build = await run('sh', ['-c', job.buildCommand], { cwd: tree, env, log: job.log, timeoutMs: job.timeoutMs, signal: job.signal });
      if (build.timedOut) {
        job.log.line('system', `build stopped after ${Math.round(job.timeoutMs / 1000)} s (the limit)`);
        return { ok: false, reason: 'timeout' };
      }
      if (build.exitCode !== 0) {
        job.log.line('system', `build failed with exit code ${build.exitCode ?? `signal ${build.signal}`}`);
        return { ok: false, reason: 'build_failed', exitCode: build.exitCode ?? undefined };
      }
    }

    // 3. artifact
    const output = path.resolve(tree, job.outputDir);
    if (!output.startsWith(tree) || !(await stat(output).catch(() => undefined))?.isDirectory()) {
      job.log.line('system', `output directory ${job.outputDir} does not exist after the build`);
      return { ok: false, reason: 'output_missing' };
    }
    await rm(job.artifactDir, { recursive: true, force: true });
    await mkdir(path.dirname(job.artifactDir), { recursive: true });
    await cp(output, job.artifactDir, { recursive: true, filter: (src) => path.basename(src) !== '.git' });
    job.log.line('system', 'build ready');
    return { ok: true, gitSha: sha };
  } finally {
    await rm(job.workDir, { recursive: true, force: true }).catch(() => undefined);
  }
}

interface RunResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
}

/** Run a command in a process group of its own, streaming its output to the log; kill the group on timeout or abort. */
function run(cmd: string, args: string[], o: { cwd: string; env: Record<string, string>; log: BuildLog; timeoutMs: number; signal?: AbortSignal }): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: o.cwd, env: o.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let timedOut = false;
    const killGroup = () => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, o.timeoutMs);
    const onAbort = () => killGroup();
    o.signal?.addEventListener('abort', onAbort, { once: true });
    child.stdout.setEncoding('utf8').on('data', (c: string) => o.log.write('stdout', c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => o.log.write('stderr', c));
    child.on('error', (err) => o.log.line('system', `could not start ${cmd}: ${err.message}`));
    child.on('close', (exitCode, signal) => {
      clearTimeout(timer);
      o.signal?.removeEventListener('abort', onAbort);
      // Whatever the command left running in its group goes with it.
      killGroup();
      resolve({ exitCode, signal, timedOut });
    });
  });
}

function capture(cmd: string, args: string[], o: { cwd: string; env: Record<string, string> }): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: o.cwd, env: o.env, stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`${cmd} ${args.join(' ')} exited ${code}`))));
  });
}
