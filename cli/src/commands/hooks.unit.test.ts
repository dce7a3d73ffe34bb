import { describe, expect, it } from 'vitest';
import { cx } from './fake-cli.ts';

/** `cx hooks list | create | delete`: a deploy hook's URL shown once, the list as a table, `--json` as answered. */
const HOOK = { id: 'dhk_1', name: 'main pushes', branch: 'main', hint: 'cxhook_Ab…', createdAt: '2025-01-02T03:04:05.000Z', lastUsedAt: null };

describe('cx hooks', () => {
  it('list prints a table, and --json the answer', async () => {
    const r = await cx(['hooks', 'list', '-p', 'shop'], { 'GET /projects/shop/deploys/hooks': { hooks: [HOOK] } });
    expect(r.stdout).toBe('ID     NAME         BRANCH  CREATED\ndhk_1  main pushes  main    2025-01-02T03:04:05.000Z\n');
    const j = await cx(['hooks', 'list', '-p', 'shop', '--json'], { 'GET /projects/shop/deploys/hooks': { hooks: [] } });
    expect(JSON.parse(j.stdout)).toEqual({ hooks: [] });
  });

  it('create sends the name and the branch when given, and shows the URL once', async () => {
    const created = { hook: { ...HOOK, token: 'cxhook_secret', url: 'https://cx.example/v1/hooks/cxhook_secret' } };
    const r = await cx(['hooks', 'create', 'main pushes', '-p', 'shop', '-b', 'main'], { 'POST /projects/shop/deploys/hooks': created });
    expect(r.calls[0]!.body).toEqual({ name: 'main pushes', branch: 'main' });
    expect(r.stdout).toBe('Hook dhk_1 for main. Its URL is shown only now:\nhttps://cx.example/v1/hooks/cxhook_secret\n');
    const j = await cx(['hooks', 'create', 'default', '-p', 'shop', '--json'], { 'POST /projects/shop/deploys/hooks': created });
    expect(j.calls[0]!.body).toEqual({ name: 'default' });
    expect(JSON.parse(j.stdout)).toEqual(created);
  });

  it('delete says which hook went; --json names it', async () => {
    const r = await cx(['hooks', 'delete', '-p', 'shop', 'dhk_1'], { 'DELETE /projects/shop/deploys/hooks/dhk_1': null });
    expect([r.code, r.stdout]).toEqual([0, 'Deleted dhk_1\n']);
    const j = await cx(['hooks', 'delete', '-p', 'shop', 'dhk_1', '--json'], { 'DELETE /projects/shop/deploys/hooks/dhk_1': null });
    expect(JSON.parse(j.stdout)).toEqual({ deleted: 'dhk_1' });
  });

  it('create without a name, or without a project, is a usage error', async () => {
    const noName = await cx(['hooks', 'create', '-p', 'shop']);
    expect([noName.code, noName.calls]).toEqual([2, []]);
    expect(noName.stderr).toMatch(/missing required argument 'name'/);
    expect((await cx(['hooks', 'list'])).code).toBe(2);
  });
});
