import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { DeployCommit } from '../../domain/deploys/suspect-commits.ts';

/**
 * The commits a deploy brings (issue 41, suspect commits), read from its fresh checkout right after the clone and
 * before the build command runs (build-run.ts), so the repository's .git is still as git's clone made it:
 *   1. run     `git log` of HEAD, newest first, at most `maxCommits + 1` commits with the files each touched, under a
 *              wall-clock limit and an output bound; the repository is tenant input, so git runs with no hooks, no
 *              fsmonitor, no external diff or textconv, no signature checks, no pager, no lazy fetch and no protocol
 *              allowed (no network), and with no system or user configuration but a throwaway `safe.directory`
 *   2. parse   each record bounded: subject cut, author's name only (never the e-mail), files cut per commit
 *   3. choose  the commits newer than `since` (the previous production deploy's sha) when it is among them; when there
 *              is none, or it is not among the newest commits (not an ancestor, or further back than the bound), the
 *              head commit alone
 * Any failure reads as no commits: recording them never fails a build.
 */
export interface CommitBounds {
  maxCommits: number;
  maxFilesPerCommit: number;
  subjectChars: number;
  authorChars: number;
  pathChars: number;
  outputBytes: number;
  timeoutMs: number;
}

export const COMMIT_BOUNDS: CommitBounds = {
  maxCommits: 50,
  maxFilesPerCommit: 100,
  subjectChars: 200,
  authorChars: 100,
  pathChars: 500,
  outputBytes: 4 * 1024 * 1024,
  timeoutMs: 10_000,
};

export type ReadCommitsOutcome = { ok: true; commits: DeployCommit[] } | { ok: false; reason: 'git_failed' | 'git_timeout' };

/** Configuration given on git's command line: it overrides the repository's own .git/config for this process. */
const SAFE_CONFIG = [
  'core.hooksPath=/dev/null',
  'core.fsmonitor=false',
  'core.pager=cat',
  'core.sshCommand=false',
  'core.askPass=false',
  'credential.helper=',
  'diff.external=',
  'log.showSignature=false',
  'gpg.program=false',
  'gpg.openpgp.program=false',
  'gpg.x509.program=false',
  'gpg.ssh.program=false',
  'protocol.allow=never',
  'log.follow=false',
  'log.mailmap=false',
].flatMap((c) => ['-c', c]);

export async function readCommits(checkoutDir: string, since: string | null, bounds: CommitBounds = COMMIT_BOUNDS): Promise<ReadCommitsOutcome> {
  // 1. run
  const home = await mkdtemp(path.join(os.tmpdir(), 'commits-'));
  try {
    // The checkout may belong to the sandbox's user: git reads it only when a global config names it safe.
    const globalConfig = path.join(home, 'gitconfig');
    await writeFile(globalConfig, '[safe]\n\tdirectory = *\n');
    const argv = [
      ...SAFE_CONFIG,
      '-C',
      checkoutDir,
      '--no-pager',
      'log',
      '--no-ext-diff',
      '--no-textconv',
      '--no-color',
      '--no-renames',
      '-z',
      '--name-only',
      `--max-count=${bounds.maxCommits + 1}`,
      '--format=%x1e%H%x1f%an%x1f%ct%x1f%s',
      'HEAD',
      '--',
    ];
    const run = await runBounded('git', argv, {
      cwd: home,
      env: {
        PATH: '/usr/local/bin:/usr/bin:/bin',
        LANG: 'C.UTF-8',
        HOME: home,
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_CONFIG_GLOBAL: globalConfig,
        GIT_TERMINAL_PROMPT: '0',
        GIT_NO_LAZY_FETCH: '1',
        GIT_NO_REPLACE_OBJECTS: '1',
        GIT_OPTIONAL_LOCKS: '0',
      },
      maxBytes: bounds.outputBytes,
      timeoutMs: bounds.timeoutMs,
    });
    if (run.timedOut) return { ok: false, reason: 'git_timeout' };
    if (!run.cut && run.exitCode !== 0) return { ok: false, reason: 'git_failed' };
    // 2. parse, 3. choose
    return { ok: true, commits: chooseCommits(parseGitLog(run.stdout, run.cut, bounds), since, bounds) };
  } finally {
    await rm(home, { recursive: true, force: true }).catch(() => undefined);
  }
}

/** `git log -z --name-only --format=%x1e%H%x1f%an%x1f%ct%x1f%s`: a record per commit; a record cut by the bound is dropped. */
export function parseGitLog(out: Buffer, cut: boolean, bounds: CommitBounds = COMMIT_BOUNDS): DeployCommit[] {
  const records = out.toString('utf8').split('\x1e').slice(1);
  if (cut) records.pop();
  const commits: DeployCommit[] = [];
  for (const rec of records) {
    const nul = rec.indexOf('\0');
    const header = nul < 0 ? rec : rec.slice(0, nul);
    const [sha, author, time, ...subject] = header.split('\x1f');
    if (!sha || !/^[0-9a-f]{40,64}$/.test(sha)) continue;
    const seconds = Number(time);
    const files =
      nul < 0
        ? []
        : rec
            .slice(nul + 1)
            .replace(/^\n/, '')
            .split('\0')
            .filter((f) => f.length > 0);
    commits.push({
      sha,
      author: cut1(author ?? '', bounds.authorChars),
      committedAt: Number.isFinite(seconds) ? new Date(seconds * 1000).toISOString() : new Date(0).toISOString(),
      subject: cut1(subject.join(' '), bounds.subjectChars),
      files: files.slice(0, bounds.maxFilesPerCommit).map((f) => cut1(f, bounds.pathChars)),
      filesCut: files.length > bounds.maxFilesPerCommit,
    });
  }
  return commits;
}

/** Newer than `since` when it is among the commits read; otherwise the head commit alone. */
export function chooseCommits(commits: DeployCommit[], since: string | null, bounds: CommitBounds = COMMIT_BOUNDS): DeployCommit[] {
  const at = since ? commits.findIndex((c) => c.sha === since) : -1;
  if (at < 0) return commits.slice(0, 1);
  return commits.slice(0, Math.min(at, bounds.maxCommits));
}

function cut1(s: string, max: number): string {
  // Control characters (a subject is free text) are shown as spaces.
  const clean = s.replace(/[\u0000-\u001f\u007f]/g, ' ');
  return clean.length > max ? `${clean.slice(0, max - 1)}…` : clean;
}

interface BoundedRun {
  stdout: Buffer;
  exitCode: number | null;
  timedOut: boolean;
  /** The output reached its bound: the process was stopped there. */
  cut: boolean;
}

function runBounded(cmd: string, argv: string[], o: { cwd: string; env: Record<string, string>; maxBytes: number; timeoutMs: number }): Promise<BoundedRun> {
  return new Promise((resolve) => {
    const child = spawn(cmd, argv, { cwd: o.cwd, env: o.env, stdio: ['ignore', 'pipe', 'ignore'] });
    const chunks: Buffer[] = [];
    let bytes = 0;
    let cut = false;
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, o.timeoutMs);
    child.stdout.on('data', (b: Buffer) => {
      if (cut) return;
      const room = o.maxBytes - bytes;
      chunks.push(b.length > room ? b.subarray(0, room) : b);
      bytes += Math.min(b.length, room);
      if (bytes >= o.maxBytes) {
        cut = true;
        child.kill('SIGKILL');
      }
    });
    const done = (exitCode: number | null) => {
      clearTimeout(timer);
      resolve({ stdout: Buffer.concat(chunks), exitCode, timedOut: timedOut && !cut, cut });
    };
    child.on('error', () => done(null));
    child.on('close', (code) => done(code));
  });
}
