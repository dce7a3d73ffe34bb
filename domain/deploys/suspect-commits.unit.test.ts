import { describe, expect, it } from 'vitest';
import type { SymbolicatedFrame } from '../../schemas/symbolicated-frame.ts';
import { culpritFile, type DeployCommit, firstInAppFile, samePathBySuffix, suspectCommits } from './suspect-commits.ts';

const commit = (sha: string, files: string[]): DeployCommit => ({
  sha,
  author: 'A',
  committedAt: '2026-01-01T00:00:00.000Z',
  subject: sha,
  files,
  filesCut: false,
});

describe('suspectCommits (issue 41)', () => {
  const commits = [commit('c3', ['public/assets/app.js', 'README.md']), commit('c2', ['src/util.ts']), commit('c1', ['src/app.ts', 'src/xapp.ts'])];

  it('names the commits that touched the file, by whole-segment suffix', () => {
    expect(suspectCommits(commits, 'src/app.ts').map((c) => c.sha)).toEqual(['c1']);
    expect(suspectCommits(commits, 'src/app.ts')[0]!.matched).toEqual(['src/app.ts']);
    expect(suspectCommits(commits, '/assets/app.js').map((c) => c.sha)).toEqual(['c3']);
    expect(suspectCommits(commits, 'https://shop.example/assets/app.js?v=3#x').map((c) => c.sha)).toEqual(['c3']);
    expect(suspectCommits(commits, 'webpack://shop/./src/util.ts').map((c) => c.sha)).toEqual(['c2']);
    expect(suspectCommits(commits, '../src/app.ts').map((c) => c.sha)).toEqual(['c1']);
  });

  it('never matches part of a segment, an empty path or no file', () => {
    expect(samePathBySuffix('src/xapp.ts', 'app.ts')).toBe(false);
    expect(samePathBySuffix('src/app.ts', 'app.ts')).toBe(true);
    expect(suspectCommits(commits, 'lib/app.ts')).toEqual([]);
    expect(suspectCommits(commits, 'https://shop.example/')).toEqual([]);
    expect(suspectCommits(commits, undefined)).toEqual([]);
  });

  it("takes the first in-app frame's original file once a source map resolved it, its minified file otherwise", () => {
    const lib: SymbolicatedFrame = {
      minified: { fn: 'x', file: 'https://s/assets/vendor.js' },
      inApp: false,
      resolution: { status: 'unresolved', reason: 'no_map' },
    };
    const resolved: SymbolicatedFrame = {
      minified: { fn: 'a', file: 'https://s/assets/app.js' },
      original: { fn: 'checkout', file: 'webpack://shop/./src/app.ts' },
      inApp: true,
      resolution: { status: 'resolved', match: 'deploy', deployId: 'dep_1', mapName: 'assets/app.js.map' },
    };
    const plain: SymbolicatedFrame = {
      minified: { fn: 'b', file: 'https://s/assets/other.js' },
      inApp: true,
      resolution: { status: 'unresolved', reason: 'no_map' },
    };
    expect(firstInAppFile([lib, resolved, plain])).toBe('webpack://shop/./src/app.ts');
    expect(firstInAppFile([lib, plain, resolved])).toBe('https://s/assets/other.js');
    expect(firstInAppFile([lib])).toBeUndefined();
    expect(firstInAppFile(null)).toBeUndefined();
  });

  it("reads the file of an issue's culprit", () => {
    expect(culpritFile('loadUser (https://s/assets/users.js:12:5)')).toBe('https://s/assets/users.js');
    expect(culpritFile('src/app.ts:3')).toBe('src/app.ts');
    expect(culpritFile('handler (C:\\app\\src\\a.ts:1:2)')).toBe('C:\\app\\src\\a.ts');
    expect(culpritFile('')).toBeUndefined();
    expect(culpritFile(null)).toBeUndefined();
  });
});
