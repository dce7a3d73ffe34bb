import { describe, expect, it } from 'vitest';
import { gitShaVariables, systemVariables, variablesFor, type StoredVariable } from './build-variables.ts';

/** Which variables a build gets (issue 42): per environment, a branch's override over the plain preview value. */
const v = (name: string, value: string, production: boolean, preview: boolean, branch = ''): StoredVariable => ({
  name,
  value,
  secret: false,
  production,
  preview,
  branch,
});
const rows = [
  v('API', 'prod', true, false),
  v('API', 'preview', false, true),
  v('API', 'feature', false, true, 'feature'),
  v('BOTH', 'b', true, true),
  v('ONLY_FEATURE', 'f', false, true, 'feature'),
];

describe('variablesFor', () => {
  it('gives production builds the production values only', () => {
    expect(variablesFor(rows, 'production', 'main')).toEqual({ API: 'prod', BOTH: 'b' });
  });
  it("gives a preview its branch's override over the plain preview value, other branches' overrides to nobody else", () => {
    expect(variablesFor(rows, 'preview', 'feature')).toEqual({ API: 'feature', BOTH: 'b', ONLY_FEATURE: 'f' });
    expect(variablesFor(rows, 'preview', 'other')).toEqual({ API: 'preview', BOTH: 'b' });
  });
  it('never lets a branch override reach a production build of that branch', () => {
    expect(variablesFor(rows, 'production', 'feature')).toEqual({ API: 'prod', BOTH: 'b' });
  });
});

describe('system variables', () => {
  it('each has a VITE_ copy', () => {
    const s = systemVariables({
      deployId: 'dep_1',
      environment: 'preview',
      branch: 'b',
      deployUrl: 'https://d/',
      productionUrl: 'https://p/',
      ingestKey: 'cak_live_x',
    });
    expect(Object.keys(s).sort()).toEqual(
      ['CX_BRANCH', 'CX_DEPLOY_ID', 'CX_DEPLOY_URL', 'CX_ENVIRONMENT', 'CX_INGEST_KEY', 'CX_PRODUCTION_URL'].flatMap((k) => [k, `VITE_${k}`]).sort(),
    );
    expect(s.VITE_CX_INGEST_KEY).toBe('cak_live_x');
    expect(gitShaVariables('abc')).toEqual({ CX_GIT_SHA: 'abc', VITE_CX_GIT_SHA: 'abc' });
  });
});
