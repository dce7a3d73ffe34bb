import { Option } from 'commander';
import type { Deploy } from '../../../schemas/api/deploys.ts';
import type { Client } from '../client.ts';
import type { Out } from '../output.ts';
import { CliExit, EXIT, type Ctx, type Family } from './command.ts';

/** `cx deploy`, `cx deploys list | rollback | cancel`, `cx logs`: a deploy queued and its build log followed to the end. */

const _e = encodeURIComponent;
const queueDeploy = (client: Client, slug: string, body: { branch?: string }) => client.api.call('queueDeploy', { params: { slug }, body });
const listDeploys = (client: Client, slug: string) => client.api.call('listDeploys', { params: { slug } });
const getDeploy = (client: Client, slug: string, id: string) => client.api.call('getDeploy', { params: { slug, deployId: id } });
const getDeployLogs = (client: Client, slug: string, id: string, from: number) =>
  client.api.call('getDeployLogs', { params: { slug, deployId: id }, query: { from } });
const rollbackDeploy = (client: Client, slug: string, id: string) => client.api.call('rollbackDeploy', { params: { slug, deployId: id } });
const cancelDeploy = (client: Client, slug: string, id: string) => client.api.call('cancelDeploy', { params: { slug, deployId: id } });

const FINISHED = new Set(['ready', 'failed', 'canceled']);
/** How long to wait before asking for more of a log that had nothing new. */
export const LOG_POLL_MS = 500;

/** Print the build log until the deploy finished (`--json`: one JSON line per log line); answers its final state. */
async function follow({ client, out, io }: Ctx, slug: string, deploy: Deploy): Promise<Deploy> {
  let next = 0;
  const spin = out.spinner(`${deploy.id} queued`);
  try {
    for (;;) {
      const page = await getDeployLogs(client, slug, deploy.id, next);
      if (page.lines.length) spin.stop();
      for (const l of page.lines) {
        if (out.json) out.print(JSON.stringify(l));
        else out.print(l.stream === 'system' ? out.paint('dim', l.line) : l.stream === 'stderr' ? out.paint('warn', l.line) : l.line);
      }
      next = page.nextSeq;
      if (page.done) break;
      if (!page.lines.length) spin.update(`${deploy.id} ${page.status}`);
      await io.sleep(LOG_POLL_MS);
    }
  } finally {
    spin.stop();
  }
  return (await getDeploy(client, slug, deploy.id)).deploy;
}

/** The final line; a deploy that is not ready exits 4. */
function finish(out: Out, d: Deploy): void {
  if (out.json) out.data({ deploy: d });
  else if (d.status === 'ready') out.print(`${out.paint('ok', 'Ready')} ${d.id}${d.url ? ` at ${d.url}` : ''}`);
  else
    out.print(
      `${out.paint('bad', d.status === 'failed' ? 'Failed' : 'Canceled')} ${d.id}${d.failureReason ? `: ${d.failureReason}` : ''}${d.exitCode !== null ? ` (exit ${d.exitCode})` : ''}`,
    );
  if (d.status !== 'ready') throw new CliExit(EXIT.deployFailed, '');
}

export const deploys: Family = {
  groups: { deploys: 'list, roll back and cancel deploys' },
  commands: [
    {
      name: 'deploy',
      description: 'queue a deploy and follow its build log until it is ready or failed',
      project: true,
      options: () => [new Option('-b, --branch <branch>', "the branch (default: the project's default branch)"), new Option('--no-follow', 'only queue it')],
      async run(ctx, _args, opts) {
        const slug = ctx.project();
        const branch = opts.branch as string | undefined;
        const q = await queueDeploy(ctx.client, slug, branch ? { branch } : {});
        if (!ctx.out.json) ctx.out.note(`${q.deduplicated ? 'Already queued' : 'Queued'} ${q.deploy.id} (${q.deploy.environment}, ${q.deploy.branch})`);
        if (opts.follow === false) return ctx.out.json ? ctx.out.data(q) : undefined;
        finish(ctx.out, await follow(ctx, slug, q.deploy));
      },
    },
    {
      name: 'deploys list',
      description: 'the newest deploys',
      project: true,
      async run({ client, out, project }) {
        const r = await listDeploys(client, project());
        if (out.json) return out.data(r);
        out.table(
          r.data.map((d) => ({ id: d.id, status: d.status, environment: d.environment, branch: d.branch, created: d.createdAt })),
          ['id', 'status', 'environment', 'branch', 'created'],
        );
      },
    },
    {
      name: 'deploys rollback',
      args: '<deployId>',
      description: 'serve an earlier production deploy again',
      project: true,
      async run({ client, out, project }, [id]) {
        const r = await rollbackDeploy(client, project(), id!);
        if (out.json) return out.data(r);
        out.print(`Rolled back: ${id} is live again`);
      },
    },
    {
      name: 'deploys cancel',
      args: '<deployId>',
      description: 'cancel a queued or building deploy',
      project: true,
      async run({ client, out, project }, [id]) {
        const r = await cancelDeploy(client, project(), id!);
        if (out.json) return out.data(r);
        out.print(`Canceled ${id}`);
      },
    },
    {
      name: 'logs',
      args: '<deployId>',
      description: "print a deploy's build log, following it until the build ends",
      project: true,
      async run(ctx, [id]) {
        const slug = ctx.project();
        const final = await follow(ctx, slug, (await getDeploy(ctx.client, slug, id!)).deploy);
        if (!FINISHED.has(final.status)) return;
        if (!ctx.out.json) ctx.out.note(`${final.id} ${final.status}`);
        if (final.status !== 'ready') throw new CliExit(EXIT.deployFailed, '');
      },
    },
  ],
};
