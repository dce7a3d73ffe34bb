import { describe, expect, it } from 'vitest';
import type { ApiKey } from '../../../schemas/api/keys.ts';
import { cx } from './fake-cli.ts';

/** `cx keys list | create | revoke`: the token shown once, scopes only on API keys, `--json` as answered. */
const key = (over: Partial<ApiKey> = {}): ApiKey => ({
  id: 'key_1',
  kind: 'ingest',
  name: 'from cx',
  hint: 'cak_live_Ab…',
  scopes: [],
  createdAt: '2025-01-02T03:04:05.000Z',
  lastUsedAt: null,
  revokedAt: null,
  revoked: false,
  ...over,
});

describe('cx keys', () => {
  it('list prints a table (scopes joined, revoked marked), and --json the answer', async () => {
    const answer = {
      keys: [key(), key({ id: 'key_2', kind: 'live', name: 'ci', hint: 'cx_live_Cd…', scopes: ['errors:read', 'deploys:write'], revoked: true })],
    };
    const r = await cx(['keys', 'list', '-p', 'shop'], { 'GET /projects/shop/keys': answer });
    expect(r.stdout).toBe(
      'ID     KIND    NAME     KEY           SCOPES                     REVOKED\n' +
        'key_1  ingest  from cx  cak_live_Ab…\n' +
        'key_2  live    ci       cx_live_Cd…   errors:read,deploys:write  yes\n',
    );
    expect(JSON.parse((await cx(['keys', 'list', '-p', 'shop', '--json'], { 'GET /projects/shop/keys': answer })).stdout)).toEqual(answer);
  });

  it('create makes an ingest key by default (no scopes sent) and shows its token once, with the DSN', async () => {
    const created = { key: { ...key(), token: 'cak_live_secret', dsn: 'https://cak_live_secret@cx.example/1' } };
    const r = await cx(['keys', 'create', '-p', 'shop', '--name', 'from cx'], { 'POST /projects/shop/keys': created });
    expect(r.calls[0]!.body).toEqual({ kind: 'ingest', name: 'from cx' });
    expect(r.stdout).toBe('Key key_1 (ingest). Its token is shown only now:\ncak_live_secret\nSentry DSN: https://cak_live_secret@cx.example/1\n');
  });

  it('create of an API key sends its scopes; --json prints the answer', async () => {
    const created = { key: { ...key({ kind: 'live', scopes: ['errors:read', 'deploys:write'] }), token: 'cx_live_secret', dsn: null } };
    const r = await cx(['keys', 'create', '-p', 'shop', '--kind', 'live', '--scope', 'errors:read', 'deploys:write', '--json'], {
      'POST /projects/shop/keys': created,
    });
    expect(r.calls[0]!.body).toEqual({ kind: 'live', scopes: ['errors:read', 'deploys:write'] });
    expect(JSON.parse(r.stdout)).toEqual(created);
  });

  it('create refuses an unknown kind (exit 2) and asks nothing', async () => {
    const r = await cx(['keys', 'create', '-p', 'shop', '--kind', 'admin']);
    expect([r.code, r.calls]).toEqual([2, []]);
    expect(r.stderr).toMatch(/Allowed choices are ingest, live, test/);
  });

  it('revoke deletes the key by id', async () => {
    const r = await cx(['keys', 'revoke', '-p', 'shop', 'key_1'], { 'DELETE /projects/shop/keys/key_1': { key: key({ revoked: true }) } });
    expect([r.code, r.stdout, r.calls[0]!.method]).toEqual([0, 'Revoked key_1\n', 'DELETE']);
    const j = await cx(['keys', 'revoke', '-p', 'shop', 'key_1', '--json'], { 'DELETE /projects/shop/keys/key_1': { key: key({ revoked: true }) } });
    expect(JSON.parse(j.stdout).key.revoked).toBe(true);
    expect((await cx(['keys', 'revoke', '-p', 'shop'])).code).toBe(2);
  });
});
