import { describe, expect, it } from 'vitest';
import { ApiError } from '../client.ts';
import { cx } from './fake-cli.ts';

/** `cx previews ...`: preview protection, its password and share links (issue 42), against a fake server. */
const at = '2025-01-02T03:04:05.000Z';
const project = (enabled: boolean, passwordSet: boolean) => ({ project: { slug: 'shop', previewProtection: { enabled, passwordSet } } });
const LINK = { id: 'pvl_1', createdAt: at, expiresAt: '2025-01-09T03:04:05.000Z', revokedAt: null };

describe('cx previews', () => {
  it('status says who opens the previews; --json the setting', async () => {
    const r = await cx(['previews', 'status', '-p', 'shop'], { 'GET /projects/shop': project(true, false) });
    expect([r.code, r.stdout]).toEqual([0, 'Previews are protected: share links only\n']);
    const j = await cx(['previews', 'status', '-p', 'shop', '--json'], { 'GET /projects/shop': project(false, false) });
    expect(JSON.parse(j.stdout)).toEqual({ previewProtection: { enabled: false, passwordSet: false } });
  });

  it('on and off send the switch alone', async () => {
    const on = await cx(['previews', 'on', '-p', 'shop'], { 'PATCH /projects/shop': project(true, true) });
    expect(on.calls[0]!.body).toEqual({ previewProtection: { enabled: true } });
    expect(on.stdout).toBe('Previews are protected: the password or a share link opens them\n');
    const off = await cx(['previews', 'off', '-p', 'shop'], { 'PATCH /projects/shop': project(false, true) });
    expect(off.calls[0]!.body).toEqual({ previewProtection: { enabled: false } });
    expect(off.stdout).toBe('Previews are public\n');
  });

  it('password sets one (argument or CX_PREVIEW_PASSWORD), --remove sends null; a short, missing or doubled one is a usage error and sends nothing', async () => {
    const set = await cx(['previews', 'password', 'correct horse', '-p', 'shop'], { 'PATCH /projects/shop': project(true, true) });
    expect(set.calls[0]!.body).toEqual({ previewProtection: { password: 'correct horse' } });
    expect(set.stdout).toContain('Password set');
    const fromEnv = await cx(
      ['previews', 'password', '-p', 'shop'],
      { 'PATCH /projects/shop': project(true, true) },
      { env: { CX_PREVIEW_PASSWORD: 'battery staple' } },
    );
    expect(fromEnv.calls[0]!.body).toEqual({ previewProtection: { password: 'battery staple' } });
    const removed = await cx(['previews', 'password', '--remove', '-p', 'shop'], { 'PATCH /projects/shop': project(true, false) });
    expect(removed.calls[0]!.body).toEqual({ previewProtection: { password: null } });
    expect(removed.stdout).toBe('Password removed. Previews are protected: share links only\n');
    for (const args of [['short'], [], ['long enough', '--remove']]) {
      const bad = await cx(['previews', 'password', ...args, '-p', 'shop']);
      expect([bad.code, bad.calls], args.join(' ')).toEqual([2, []]);
    }
  });

  it('links lists the share links; share makes one (days, a deploy) and prints it once; revoke ends one', async () => {
    const list = await cx(['previews', 'links', '-p', 'shop'], {
      'GET /projects/shop/preview-links': { links: [LINK, { ...LINK, id: 'pvl_0', revokedAt: at }] },
    });
    expect(list.stdout.split('\n')[0]).toMatch(/^ID\s+CREATED\s+EXPIRES\s+REVOKED$/);
    expect(list.stdout).toMatch(/pvl_0\s+2025-01-02T03:04:05.000Z\s+2025-01-09T03:04:05.000Z\s+2025-01-02T03:04:05.000Z/);
    const made = { link: { ...LINK, token: 'tok', path: '/.cx/share/tok', url: 'https://dep-1.sites.example/.cx/share/tok' } };
    const share = await cx(['previews', 'share', '-p', 'shop', '--days', '3', '--deploy', 'dep_1'], { 'POST /projects/shop/preview-links': made });
    expect(share.calls[0]!.body).toEqual({ days: 3, deployId: 'dep_1' });
    expect(share.stdout).toContain('https://dep-1.sites.example/.cx/share/tok');
    const anyHost = await cx(['previews', 'share', '-p', 'shop'], { 'POST /projects/shop/preview-links': { link: { ...made.link, url: null } } });
    expect(anyHost.calls[0]!.body).toEqual({});
    expect(anyHost.stdout).toContain('/.cx/share/tok');
    const badDays = await cx(['previews', 'share', '-p', 'shop', '--days', 'a week']);
    expect([badDays.code, badDays.calls]).toEqual([2, []]);
    const revoke = await cx(['previews', 'revoke', 'pvl_1', '-p', 'shop'], { 'DELETE /projects/shop/preview-links/pvl_1': null });
    expect([revoke.code, revoke.stdout]).toEqual([0, 'Revoked pvl_1\n']);
  });

  it("the service's refusal is the command's: exit 1 with its message", async () => {
    const full = await cx(['previews', 'share', '-p', 'shop'], {
      'POST /projects/shop/preview-links': new ApiError(409, 'conflict', 'at most 50 share links are open at once'),
    });
    expect(full.code).toBe(1);
    expect(full.stderr).toContain('at most 50 share links');
  });
});
