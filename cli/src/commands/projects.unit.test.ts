import { describe, expect, it } from 'vitest';
import { BASE, cx } from './fake-cli.ts';

/** `cx projects list | create | open`: the request each makes, the table or sentence, `--json` as the API answered. */
const LIST = {
  projects: [
    { slug: 'shop', name: 'Shop', defaultBranch: 'main' },
    { slug: 'blog', name: 'Blog', defaultBranch: 'trunk' },
  ],
};

describe('cx projects', () => {
  it('list prints a table, and --json the answer', async () => {
    const r = await cx(['projects', 'list'], { 'GET /projects': LIST });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('SLUG  NAME  BRANCH\nshop  Shop  main\nblog  Blog  trunk\n');
    expect(r.calls).toEqual([{ method: 'GET', path: '/projects', body: undefined, token: 'cx_cli_unit' }]);
    const j = await cx(['projects', 'list', '--json'], { 'GET /projects': LIST });
    expect(JSON.parse(j.stdout)).toEqual(LIST);
  });

  it('list of none says so', async () => {
    expect((await cx(['projects', 'list'], { 'GET /projects': { projects: [] } })).stdout).toBe('(none)\n');
  });

  it('create sends the name (and the slug only when given) and prints the console URL', async () => {
    const answer = { project: { slug: 'my-shop', name: 'My shop', defaultBranch: 'main' } };
    const r = await cx(['projects', 'create', 'My shop', '--slug', 'my-shop'], { 'POST /projects': answer });
    expect(r.calls[0]!.body).toEqual({ name: 'My shop', slug: 'my-shop' });
    expect(r.stdout).toBe(`Created my-shop: ${BASE}/projects/my-shop\n`);
    const plain = await cx(['projects', 'create', 'My shop', '--json'], { 'POST /projects': answer });
    expect(plain.calls[0]!.body).toEqual({ name: 'My shop' });
    expect(JSON.parse(plain.stdout)).toEqual(answer);
  });

  it('create without a name is a usage error (exit 2) and asks nothing', async () => {
    const r = await cx(['projects', 'create'], {});
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/missing required argument 'name'/);
    expect(r.calls).toEqual([]);
  });

  it('open prints the escaped console URL without calling the API', async () => {
    const r = await cx(['projects', 'open', 'a b']);
    expect([r.code, r.stdout, r.calls]).toEqual([0, `${BASE}/projects/a%20b\n`, []]);
    expect(JSON.parse((await cx(['projects', 'open', 'shop', '--json'])).stdout)).toEqual({ url: `${BASE}/projects/shop` });
  });
});
