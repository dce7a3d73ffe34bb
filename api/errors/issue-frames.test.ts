import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, buildTestApi, createKey, createProject, sessionHeaders, signUpAndSignIn } from '../../test/support/accounts.ts';
import { sampleWith, seedIssue, seedStorefrontIssue, stackOf } from '../../test/support/symbolicated-issue.ts';

/**
 * The issue's symbolicated frames through the API (issue 37): the newest occurrence's frames and minified stack beside
 * its original stack, each sample's own, typed in the answer's schema; an issue stored before symbolication answers as
 * before; a stored frame list the API cannot read is left out instead of failing the issue; MCP's get_issue reads the
 * original frames and the failing source line.
 */
describe('issue detail with symbolicated frames', () => {
  let t: Awaited<ReturnType<typeof buildTestApi>>;
  let cookie: string;
  beforeAll(async () => {
    t = await buildTestApi();
    cookie = (await signUpAndSignIn(t.app, t.platform)).cookie;
  });
  afterAll(async () => t?.close());

  const getIssue = async (slug: string, groupId: string) => {
    const res = await t.app.inject({ method: 'GET', url: `/v1/projects/${slug}/errors/${groupId}`, headers: sessionHeaders(cookie) });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().issue;
  };

  it('answers the newest occurrence frames, its minified stack and its original stack; each sample keeps its own', async () => {
    const p = await createProject(t.app, cookie);
    const { groupId, deployId, frames } = await seedStorefrontIssue(t.platform.db, p.id);
    const issue = await getIssue(p.slug, groupId);
    expect(issue.stack).toBe(stackOf(frames, 'original'));
    expect(issue.stack).toContain('at lineTotal (src/cart/totals.ts:14:27)');
    expect(issue.minifiedStack).toBe(stackOf(frames, 'minified'));
    expect(issue.minifiedStack).toContain('at r (https://shop.example.com/assets/index-3f9a2c1b.js:1:18433)');
    expect(issue.frames).toEqual(frames);
    expect(issue.frames[0]).toMatchObject({
      original: { fn: 'lineTotal', file: 'src/cart/totals.ts', line: 14, col: 27 },
      context: { firstLine: 9, errorIndex: 5 },
      resolution: { status: 'resolved', deployId, mapName: 'assets/index-3f9a2c1b.js.map' },
    });
    expect(
      issue.frames
        .filter((f: { resolution: { status: string } }) => f.resolution.status === 'unresolved')
        .map((f: { resolution: { reason: string } }) => f.resolution.reason)
        .sort(),
    ).toEqual(['busy', 'line_out_of_range', 'map_refused', 'no_map', 'not_a_url']);
    // The samples: the newest with its frames, the older one (stored before issue 37) without.
    expect(issue.samples).toHaveLength(2);
    expect(issue.samples[0].frames).toEqual(frames);
    expect(issue.samples[0].minifiedStack).toBe(issue.minifiedStack);
    expect(issue.samples[1].frames).toBeUndefined();
    expect(issue.samples[1].minifiedStack).toBeUndefined();
    expect(issue.samples[1].stack).toContain('at r (https://shop.example.com/assets/index-3f9a2c1b.js:1:18433)');
  });

  it('an issue stored before symbolication answers its plain stack, with frames and minifiedStack null', async () => {
    const p = await createProject(t.app, cookie);
    const old = sampleWith(null);
    const groupId = await seedIssue(t.platform.db, p.id, [old]);
    const issue = await getIssue(p.slug, groupId);
    expect(issue).toMatchObject({ stack: old.stack, frames: null, minifiedStack: null });
    expect(issue.samples[0]).toMatchObject({ eventId: old.eventId, stack: old.stack });
  });

  it('frames with no map at all (every frame unresolved) answer their reasons, with no minified stack', async () => {
    const p = await createProject(t.app, cookie);
    const frames = [
      {
        minified: { fn: 'r', file: 'https://shop.example.com/assets/main-1a2b3c4d.js', line: 1, col: 71 },
        inApp: true,
        resolution: { status: 'unresolved', reason: 'no_map' },
      },
    ] as const;
    const groupId = await seedIssue(t.platform.db, p.id, [sampleWith([...frames])]);
    const issue = await getIssue(p.slug, groupId);
    expect(issue.frames).toEqual(frames);
    expect(issue.minifiedStack).toBeNull();
    expect(issue.stack).toContain('main-1a2b3c4d.js:1:71');
  });

  it('a stored frame list it cannot read is left out: the issue still answers, with its stack', async () => {
    const p = await createProject(t.app, cookie);
    for (const bad of [
      'not a list',
      [{ minified: { fn: 'r' } }],
      [{ minified: { fn: 'r', file: 'x.js' }, inApp: true, resolution: { status: 'resolved' } }],
      [null],
    ]) {
      const sample: Record<string, unknown> = { ...sampleWith(null), frames: bad, minifiedStack: 42 };
      const groupId = await seedIssue(t.platform.db, p.id, [sample]);
      const issue = await getIssue(p.slug, groupId);
      expect(issue.frames).toBeNull();
      expect(issue.minifiedStack).toBeNull();
      expect(issue.stack).toBe(sample.stack);
      expect(issue.samples[0].frames).toBeUndefined();
      expect(issue.samples[0].eventId).toBe(sample.eventId);
    }
  });

  it('the OpenAPI document describes the frames', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/v1/openapi.json' });
    expect(res.statusCode).toBe(200);
    const text = res.body;
    expect(text).toContain('line_out_of_range');
    expect(text).toContain('minifiedStack');
  });

  it("MCP's get_issue shows the original frames and the failing source line, and names the frames left minified", async () => {
    const p = await createProject(t.app, cookie);
    const { groupId } = await seedStorefrontIssue(t.platform.db, p.id);
    const key = await createKey(t.app, cookie, p.slug, { kind: 'live', scopes: ['errors:read'] });
    const base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/v1/mcp`), { requestInit: { headers: bearer(key.token) } }));
    const answer = (await client.callTool({ name: 'get_issue', arguments: { groupId } })) as { content: Array<{ text: string }> };
    await client.close();
    const text = answer.content[0]!.text;
    expect(text).toContain('at lineTotal (src/cart/totals.ts:14:27)');
    expect(text).toContain('src/cart/totals.ts:14');
    expect(text).toMatch(/> +14 \| {3}return line\.quantity \* product\.price;/);
    expect(text).toContain('5 frames kept their minified form: not a served file (1); line out of range of its map (1); map could not be read (1);');
    expect(text).not.toContain('at r (https://shop.example.com/assets/index-3f9a2c1b.js');
  });
});
