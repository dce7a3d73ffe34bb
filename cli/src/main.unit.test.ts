import { describe, expect, it } from 'vitest';
import { ApiError } from './client.ts';
import { cx, refusal } from './commands/fake-cli.ts';
import { FAMILIES } from './main.ts';

/**
 * The dispatcher: every family's commands reachable by the names the README shows, help and version, and how what a
 * command throws becomes an exit code (0 ok, 1 refused or unreachable, 2 usage, 3 not signed in or not allowed).
 */
const ALL = FAMILIES.flatMap((f) => f.commands.map((c) => c.name));

describe('cx, the dispatcher', () => {
  it('has each command once, and each answers --help', async () => {
    expect(new Set(ALL).size).toBe(ALL.length);
    expect(ALL.length).toBe(38);
    for (const name of ALL) {
      const r = await cx([...name.split(' '), '--help']);
      expect([name, r.code, r.calls]).toEqual([name, 0, []]);
      expect(r.stdout).toContain(`Usage: cx ${name}`);
    }
  });

  it('lists the families, groups their verbs, and knows its version', async () => {
    const help = await cx(['--help']);
    expect(help.code).toBe(0);
    for (const word of ['login', 'projects', 'deploy', 'deploys', 'logs', 'hooks', 'env', 'previews', 'errors', 'keys', 'webhooks', 'sourcemaps'])
      expect(help.stdout).toMatch(new RegExp(`\\n  ${word} `));
    expect((await cx(['errors', '--help'])).stdout).toMatch(/list[\s\S]*show[\s\S]*resolve[\s\S]*ignore[\s\S]*reopen/);
    expect((await cx(['--version'])).stdout).toBe('0.1.0\n');
  });

  it('an unknown command, an unknown option or a bare group is a usage error (exit 2)', async () => {
    const unknown = await cx(['frobnicate']);
    expect([unknown.code, unknown.stderr]).toEqual([2, expect.stringMatching(/unknown command 'frobnicate'/)]);
    expect((await cx(['projects', 'list', '--frob'])).code).toBe(2);
    expect((await cx(['projects'])).code).toBe(2);
  });

  it('not signed in or not allowed exits 3 (and says to log in when it is the token); other refusals exit 1', async () => {
    const unauthorized = await cx(['whoami'], { 'GET /cli/whoami': refusal(401, 'unauthorized', 'sign in first') });
    expect([unauthorized.code, unauthorized.stderr]).toEqual([3, 'cx: sign in first (unauthorized); run cx login\n']);
    const forbidden = await cx(['keys', 'list', '-p', 'shop'], { 'GET /projects/shop/keys': refusal(403, 'forbidden', 'not a member') });
    expect([forbidden.code, forbidden.stderr]).toEqual([3, 'cx: not a member (forbidden)\n']);
    const limited = await cx(['projects', 'list'], { 'GET /projects': new ApiError(429, 'rate_limited', 'too many requests', 5) });
    expect([limited.code, limited.stderr]).toEqual([1, 'cx: too many requests (rate_limited); retry in 5 s\n']);
    const down = await cx(['projects', 'list'], { 'GET /projects': refusal(0, 'unreachable', 'cannot reach https://cx.example') });
    expect(down.code).toBe(1);
  });

  it('with --json a refusal is JSON on stdout', async () => {
    const r = await cx(['whoami', '--json'], { 'GET /cli/whoami': refusal(401, 'unauthorized', 'sign in first') });
    expect([r.code, JSON.parse(r.stdout), r.stderr]).toEqual([3, { error: 'unauthorized', message: 'sign in first' }, '']);
  });

  it('anything else a command throws exits 1 with its message', async () => {
    const r = await cx(['projects', 'list'], {
      'GET /projects': () => {
        throw new Error('socket hang up');
      },
    });
    expect([r.code, r.stderr]).toEqual([1, 'cx: socket hang up\n']);
  });
});
