import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * A local git repository (branch `main`, one commit) holding `files`: a project's build source in tests. In `dir` when
 * given (made if missing), else in a new temporary directory.
 */
export function gitRepoWith(files: Record<string, string>, dir?: string): string {
  const repo = dir ?? mkdtempSync(path.join(os.tmpdir(), 'repo-'));
  mkdirSync(repo, { recursive: true });
  const git = (...args: string[]) => execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { cwd: repo });
  git('init', '-q', '-b', 'main');
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(repo, name), text);
  git('add', '.');
  git('commit', '-q', '-m', 'site');
  return repo;
}
