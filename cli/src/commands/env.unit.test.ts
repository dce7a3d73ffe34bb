import { describe, expect, it } from 'vitest';
import { cx } from './fake-cli.ts';

/** `cx env add | ls | rm`: build variables per environment, against a fake server. */
const at = '2025-01-02T03:04:05.000Z';
const PROD = {
  id: 'env_1',
  key: 'API_URL',
  value: 'https://api.example.com',
  secret: false,
  target: ['production'],
  branch: null,
  createdAt: at,
  updatedAt: at,
};
const PREVIEW = { ...PROD, id: 'env_2', value: 'https://staging.example.com', target: ['preview'] };
const FEATURE = { ...PREVIEW, id: 'env_3', value: 'https://feature.example.com', branch: 'feature' };
const TOKEN = { ...PROD, id: 'env_4', key: 'TOKEN', value: '••••', secret: true, target: ['production', 'preview'] };

describe('cx env', () => {
  it('ls prints each variable with its environments, branch and secrecy; --json the answer', async () => {
    const r = await cx(['env', 'ls', '-p', 'shop'], { 'GET /projects/shop/env': { env: [PROD, FEATURE, TOKEN] } });
    expect(r.stdout.split('\n')[0]).toMatch(/^ID\s+KEY\s+VALUE\s+ENVIRONMENTS\s+BRANCH\s+SECRET$/);
    expect(r.stdout).toContain('env_3  API_URL  https://feature.example.com  preview             feature');
    expect(r.stdout).toMatch(/env_4\s+TOKEN\s+••••\s+production,preview\s+yes/);
    const j = await cx(['env', 'ls', '-p', 'shop', '--json'], { 'GET /projects/shop/env': { env: [PROD] } });
    expect(JSON.parse(j.stdout)).toEqual({ env: [PROD] });
  });

  it('add sends both environments by default, one with --production / --preview, a branch override and a secret', async () => {
    const both = await cx(['env', 'add', 'TOKEN', 's3cret', '-p', 'shop', '--secret'], { 'POST /projects/shop/env': { env: TOKEN } });
    expect(both.calls[0]!.body).toEqual({ key: 'TOKEN', value: 's3cret', secret: true });
    expect(both.stdout).toBe('Added TOKEN (production, preview): env_4\n');
    const prod = await cx(['env', 'add', 'API_URL', 'https://api.example.com', '-p', 'shop', '--production'], { 'POST /projects/shop/env': { env: PROD } });
    expect(prod.calls[0]!.body).toEqual({ key: 'API_URL', value: 'https://api.example.com', secret: false, target: ['production'] });
    const branch = await cx(['env', 'add', 'API_URL', 'https://feature.example.com', '-p', 'shop', '--preview', '--branch', 'feature'], {
      'POST /projects/shop/env': { env: FEATURE },
    });
    expect(branch.calls[0]!.body).toEqual({ key: 'API_URL', value: 'https://feature.example.com', secret: false, target: ['preview'], branch: 'feature' });
    expect(branch.stdout).toBe('Added API_URL (preview, branch feature): env_3\n');
  });

  it('rm takes an id, or a key narrowed by the flags; an ambiguous or unknown key is a usage error and deletes nothing', async () => {
    const byId = await cx(['env', 'rm', 'env_2', '-p', 'shop'], { 'DELETE /projects/shop/env/env_2': null });
    expect([byId.code, byId.stdout]).toEqual([0, 'Removed env_2\n']);
    const list = { 'GET /projects/shop/env': { env: [PROD, PREVIEW, FEATURE, TOKEN] } };
    const byKey = await cx(['env', 'rm', 'API_URL', '-p', 'shop', '--preview'], { ...list, 'DELETE /projects/shop/env/env_2': null });
    expect(byKey.stdout).toBe('Removed env_2\n');
    const byBranch = await cx(['env', 'rm', 'API_URL', '-p', 'shop', '--branch', 'feature', '--json'], { ...list, 'DELETE /projects/shop/env/env_3': null });
    expect(JSON.parse(byBranch.stdout)).toEqual({ deleted: 'env_3' });
    const ambiguous = await cx(['env', 'rm', 'API_URL', '-p', 'shop'], list);
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toContain('env_1');
    expect(ambiguous.calls.map((c) => c.method)).toEqual(['GET']);
    const unknown = await cx(['env', 'rm', 'NOPE', '-p', 'shop'], list);
    expect([unknown.code, unknown.stderr]).toEqual([2, expect.stringContaining('no variable NOPE')]);
  });

  it('add without a value, or without a project, is a usage error', async () => {
    const noValue = await cx(['env', 'add', 'KEY', '-p', 'shop']);
    expect([noValue.code, noValue.calls]).toEqual([2, []]);
    expect((await cx(['env', 'ls'])).code).toBe(2);
  });
});
