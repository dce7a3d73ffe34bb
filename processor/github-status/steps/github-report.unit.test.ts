import { describe, expect, it } from 'vitest';
import { type DeployView, commentBody, desiredStatus, inertText } from './github-report.ts';

const view = (o: Partial<DeployView> = {}): DeployView => ({
  projectId: 'prj_1',
  slug: 'shop',
  deployId: 'dep_1',
  headSha: 'a'.repeat(40),
  status: 'ready',
  environment: 'preview',
  failureReason: null,
  deployUrl: 'https://dep-1.sites.test/',
  consoleUrl: 'https://console.test/projects/shop/deploys/dep_1',
  issueUrl: (id) => `https://console.test/projects/shop/errors/${id}`,
  previewIssues: { total: 0, issues: [] },
  sessions: { started: 0, crashed: 0 },
  failOnNewErrors: false,
  ...o,
});
const issues = (n: number) => ({
  total: n,
  issues: Array.from({ length: Math.min(n, 10) }, (_, i) => ({ id: `grp_${i}`, name: 'TypeError', message: `boom ${i}` })),
});

describe('the commit status of a deploy', () => {
  it('nothing while queued; pending while building; success with the preview URL; failure with the console page', () => {
    expect(desiredStatus(view({ status: 'queued' }))).toBeUndefined();
    expect(desiredStatus(view({ status: 'building' }))).toEqual({ state: 'pending', description: 'Building preview', targetUrl: view().consoleUrl });
    expect(desiredStatus(view())).toEqual({ state: 'success', description: 'Preview ready', targetUrl: 'https://dep-1.sites.test/' });
    expect(desiredStatus(view({ status: 'failed', failureReason: 'timeout' }))).toMatchObject({
      state: 'failure',
      description: 'The preview failed (timeout)',
    });
    expect(desiredStatus(view({ status: 'canceled' }))).toMatchObject({ state: 'error' });
  });
  it('new errors fail a preview only when the project asks, and never a production deploy', () => {
    expect(desiredStatus(view({ previewIssues: issues(2) }))?.state).toBe('success');
    expect(desiredStatus(view({ previewIssues: issues(2), failOnNewErrors: true }))).toMatchObject({
      state: 'failure',
      description: 'Preview ready, but it introduced 2 new errors',
    });
    expect(desiredStatus(view({ previewIssues: issues(2), failOnNewErrors: true, environment: 'production' }))?.state).toBe('success');
  });
});

describe('the pull-request comment', () => {
  it('carries the marker first, the preview URL, the crash-free sessions and at most ten issues', () => {
    const body = commentBody(view({ previewIssues: issues(14), sessions: { started: 200, crashed: 3 } }));
    expect(body.startsWith('<!-- cx-preview:prj_1 -->\n')).toBe(true);
    expect(body).toContain('| Preview | https://dep-1.sites.test/ |');
    expect(body).toContain('| Crash-free sessions | 98.5% of 200 |');
    expect(body).toContain('Issues seen only on this preview: 14');
    expect(body.match(/^- \[/gm)).toHaveLength(10);
    expect(body).toContain('- and 4 more');
  });
  it('no sessions: no crash-free line; a building deploy has no preview URL yet', () => {
    const body = commentBody(view({ status: 'building' }));
    expect(body).not.toContain('Crash-free');
    expect(body).not.toContain('| Preview |');
  });
  it("a tenant's error text is inert: no link, no HTML, no second marker, one line, cut", () => {
    const t = inertText('x](https://evil.example) <!-- cx-preview:prj_1 --> <img src=x>\n# heading', 200);
    expect(t).not.toMatch(/(^|[^\\])[[\]()<>#]/);
    expect(t).not.toContain('\n');
    expect(inertText('a'.repeat(500)).length).toBeLessThan(130);
  });
});
