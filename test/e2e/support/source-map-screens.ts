import path from 'node:path';
import type { Page } from 'playwright-core';
import type { Queryable } from '../../../platform/ports/relational-store.ts';
import { seedStorefrontIssue } from '../../support/symbolicated-issue.ts';

/**
 * Pictures of the source-map screens (issue 37), for `npm run screenshots` and the console's source-map e2e test: an
 * issue whose frames went through source maps (original, with the source of two frames open and a folded library run
 * opened; then the minified toggle), and the deploy page's list of kept maps. The issue is written into the database as
 * the processor stores it (test/support/symbolicated-issue.ts). `page` is signed in, 1280 px wide.
 */
export const SOURCE_MAP_SCREENS = ['issue-frames', 'issue-frames-minified', 'deploy-maps'] as const;

export async function shootSourceMapScreens(opts: {
  page: Page;
  base: string;
  db: Queryable;
  projectId: string;
  slug: string;
  out: string;
}): Promise<string[]> {
  const { page, base, db, projectId, slug, out } = opts;
  const { groupId, deployId } = await seedStorefrontIssue(db, projectId);
  const written: string[] = [];
  const save = async (name: (typeof SOURCE_MAP_SCREENS)[number], fullPage = true) => {
    const file = path.join(out, `${name}.png`);
    await page.waitForTimeout(200);
    await page.screenshot({ path: file, fullPage });
    written.push(file);
  };
  await page.goto(`${base}/projects/${encodeURIComponent(slug)}/errors/${groupId}`);
  const stack = page.locator('.stack-view.symbolicated');
  await stack.waitFor();
  // The source of another in-app frame too (a component: its markup stays text), and the library run below it.
  await stack.locator('.frame.in-app details.frame-source').nth(2).locator(':scope > summary').click();
  await stack.locator('.library-run').nth(1).locator(':scope > summary').click();
  await stack.scrollIntoViewIfNeeded();
  await save('issue-frames');
  await stack.getByRole('button', { name: 'Minified' }).click();
  await save('issue-frames-minified');
  await page.goto(`${base}/projects/${encodeURIComponent(slug)}/deploys/${deployId}`);
  await page.getByRole('table', { name: 'Source maps kept from this build' }).waitFor();
  await save('deploy-maps');
  return written;
}
