import { execFileSync } from 'node:child_process';
import { chmod, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { suspectCommits } from '../../domain/deploys/suspect-commits.ts';
import { COMMIT_BOUNDS, readCommits } from './read-commits.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function repo(): { dir: string; commit(files: Record<string, string>, subject: string, author?: string): string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'commits-repo-'));
  dirs.push(dir);
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'core.hooksPath=/dev/null', '-C', dir, ...args], { env: { PATH: process.env.PATH, HOME: dir, GIT_CONFIG_NOSYSTEM: '1' } })
      .toString()
      .trim();
  git('init', '-q', '-b', 'main');
  return {
    dir,
    commit(files, subject, author = 'Ada Lovelace') {
      for (const [f, content] of Object.entries(files)) {
        mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
        writeFileSync(path.join(dir, f), content);
      }
      git('add', '-A');
      git('-c', `user.name=${author}`, '-c', 'user.email=ada@example.com', 'commit', '-q', '--allow-empty', '-m', subject);
      return git('rev-parse', 'HEAD');
    },
  };
}

describe('readCommits (issue 41, suspect commits)', () => {
  it('reads the commits since the previous deploy with author name, subject and files, and names the suspect', async () => {
    const r = repo();
    const base = r.commit({ 'README.md': 'hi' }, 'start');
    const c1 = r.commit({ 'src/app.ts': 'export {}' }, 'app: throw on empty cart', 'Grace Hopper');
    const c2 = r.commit({ 'src/util.ts': 'export {}' }, 'util: helpers\n\nlong body not kept');
    const c3 = r.commit({ 'public/assets/style.css': 'a{}' }, 'style');
    const out = await readCommits(r.dir, base);
    expect(out.ok).toBe(true);
    if (!out.ok) return;
    expect(out.commits.map((c) => c.sha)).toEqual([c3, c2, c1]);
    const one = out.commits[2]!;
    expect(one).toMatchObject({ author: 'Grace Hopper', subject: 'app: throw on empty cart', files: ['src/app.ts'], filesCut: false });
    expect(JSON.stringify(out.commits)).not.toContain('@example.com');
    expect(out.commits[1]!.subject).toBe('util: helpers');
    expect(suspectCommits(out.commits, 'webpack://shop/./src/app.ts').map((c) => c.sha)).toEqual([c1]);
    expect(suspectCommits(out.commits, 'https://shop.example/assets/style.css').map((c) => c.sha)).toEqual([c3]);
  });

  it('gives the head commit alone with no previous deploy, or one that is not an ancestor', async () => {
    const r = repo();
    r.commit({ 'a.ts': '1' }, 'a');
    const head = r.commit({ 'b.ts': '1' }, 'b');
    for (const since of [null, 'f'.repeat(40)]) {
      const out = await readCommits(r.dir, since);
      expect(out.ok && out.commits.map((c) => c.sha)).toEqual([head]);
    }
  });

  it('is bounded: commits, files per commit, subject length', async () => {
    const r = repo();
    const base = r.commit({ x: '0' }, 'base');
    for (let i = 0; i < 5; i++) r.commit({ [`f${i}.ts`]: `${i}` }, `c${i}`);
    const files = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`many/${i}.ts`, `${i}`]));
    r.commit(files, 'S'.repeat(500));
    const bounds = { ...COMMIT_BOUNDS, maxCommits: 4, maxFilesPerCommit: 10 };
    const out = await readCommits(r.dir, base, bounds);
    expect(out.ok).toBe(true);
    if (!out.ok) return;
    // base is 7 commits back, past the bound of 4 (+1 read): the head commit alone
    expect(out.commits).toHaveLength(1);
    expect(out.commits[0]!.files).toHaveLength(10);
    expect(out.commits[0]!.filesCut).toBe(true);
    expect(out.commits[0]!.subject.length).toBe(200);
    // an output bound cuts the log: the records read whole are kept, none half
    const cut = await readCommits(r.dir, null, { ...bounds, outputBytes: 200 });
    expect(cut.ok && cut.commits.length).toBeLessThanOrEqual(1);
  });

  it('keeps 50 commits at most with the default bounds', async () => {
    const r = repo();
    const base = r.commit({ x: '0' }, 'base');
    for (let i = 0; i < 50; i++) r.commit({}, `c${i}`);
    const out = await readCommits(r.dir, base);
    expect(out.ok && out.commits.length).toBe(50);
  });

  it('runs nothing of a hostile repository: hooks, fsmonitor, external diff, pager, signature programs', async () => {
    const r = repo();
    r.commit({ 'a.ts': '1' }, 'a');
    // A signed-looking commit on top: with log.showSignature from the repository's config, git would run gpg.program.
    const git = (input: string | undefined, ...args: string[]) =>
      execFileSync('git', ['-c', 'core.hooksPath=/dev/null', '-C', r.dir, ...args], {
        input,
        env: { PATH: process.env.PATH, HOME: r.dir, GIT_CONFIG_NOSYSTEM: '1' },
      })
        .toString()
        .trim();
    const tree = git(undefined, 'rev-parse', 'HEAD^{tree}');
    const parent = git(undefined, 'rev-parse', 'HEAD');
    const signed = git(
      `tree ${tree}\nparent ${parent}\nauthor M <m@x> 1 +0000\ncommitter M <m@x> 1 +0000\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n abc\n -----END PGP SIGNATURE-----\n\nsigned\n`,
      'hash-object',
      '-t',
      'commit',
      '-w',
      '--stdin',
    );
    git(undefined, 'update-ref', 'refs/heads/main', signed);
    const marker = path.join(r.dir, '..', `pwned-${path.basename(r.dir)}`);
    const script = path.join(r.dir, '.git', 'evil.sh');
    writeFileSync(script, `#!/bin/sh\ntouch '${marker}'\n`);
    await new Promise<void>((res, rej) => chmod(script, 0o755, (e) => (e ? rej(e) : res())));
    const hooks = path.join(r.dir, '.git', 'hooks');
    mkdirSync(hooks, { recursive: true });
    for (const h of ['post-checkout', 'pre-commit', 'reference-transaction', 'post-index-change'])
      writeFileSync(path.join(hooks, h), `#!/bin/sh\ntouch '${marker}'\n`, { mode: 0o755 });
    const cfg = path.join(r.dir, '.git', 'config');
    writeFileSync(
      cfg,
      `${execFileSync('cat', [cfg]).toString()}[core]\n\thooksPath = ${hooks}\n\tfsmonitor = ${script}\n\tpager = ${script}\n[diff]\n\texternal = ${script}\n[log]\n\tshowSignature = true\n[gpg]\n\tprogram = ${script}\n`,
    );
    const out = await readCommits(r.dir, null);
    expect(out.ok && out.commits.map((c) => c.sha)).toEqual([signed]);
    expect(existsSync(marker)).toBe(false);
  });

  it('reads as a failure, never throws, for a directory that is no repository', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'commits-none-'));
    dirs.push(dir);
    expect(await readCommits(dir, null)).toEqual({ ok: false, reason: 'git_failed' });
  });
});
