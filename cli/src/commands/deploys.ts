import { Option } from 'commander';
import type { BuildSettingsPatch, Deploy } from '../../../schemas/api/deploys.ts';
import { ApiError, type Client, type RawBody } from '../client.ts';
import type { Out } from '../output.ts';
import { packDir, uploadBody, uploadProgress } from '../prebuilt.ts';
import { CliExit, EXIT, type Ctx, type Family, type Opts } from './command.ts';

/**
 * `cx deploy` (or `--prebuilt <dir>`: a built directory uploaded, no build), `cx link` (the build source),
 * `cx deploys list | rollback | cancel`, `cx logs`: a deploy queued and its build log followed to the end.
 */

const _e = encodeURIComponent;
const queueDeploy = (client: Client, slug: string, body: { branch?: string }) => client.api.call('queueDeploy', { params: { slug }, body });
const listDeploys = (client: Client, slug: string) => client.api.call('listDeploys', { params: { slug } });
const getDeploy = (client: Client, slug: string, id: string) => client.api.call('getDeploy', { params: { slug, deployId: id } });
const getDeployLogs = (client: Client, slug: string, id: string, from: number) =>
  client.api.call('getDeployLogs', { params: { slug, deployId: id }, query: { from } });
const rollbackDeploy = (client: Client, slug: string, id: string) => client.api.call('rollbackDeploy', { params: { slug, deployId: id } });
const cancelDeploy = (client: Client, slug: string, id: string) => client.api.call('cancelDeploy', { params: { slug, deployId: id } });
const deployPrebuilt = (client: Client, slug: string, query: { environment?: 'preview'; branch?: string }, body: RawBody) =>
  client.api.call('deployPrebuilt', { params: { slug }, query, body: body as never });
const getSettings = (client: Client, slug: string) => client.api.call('getDeploySettings', { params: { slug } });
const updateSettings = (client: Client, slug: string, body: BuildSettingsPatch) => client.api.call('updateDeploySettings', { params: { slug }, body });

/** What `cx deploy` says of a project without a build source (the API's 409 source_missing): how to give it one. */
export const NO_SOURCE_HELP = [
  'This project has no build source, so there is nothing to build. Either:',
  '  cx link --repo <git url> [--branch main] [--command "npm run build"] [--output dist]   then cx deploy',
  '  cx deploy --prebuilt ./dist                                                          upload a directory built here',
].join('\n');

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
      options: () => [
        new Option('-b, --branch <branch>', "the branch (default: the project's default branch)"),
        new Option('--no-follow', 'only queue it'),
        new Option('--prebuilt <dir>', 'upload this built directory as the deploy (no build runs; production unless --preview)'),
        new Option('--preview', 'with --prebuilt: a preview deploy, not production'),
      ],
      async run(ctx, _args, opts) {
        const slug = ctx.project();
        const branch = opts.branch as string | undefined;
        if (typeof opts.prebuilt === 'string') return deployDirectory(ctx, slug, opts.prebuilt, opts);
        if (opts.preview) throw new CliExit(EXIT.usage, '--preview goes with --prebuilt (a build of a branch other than the default one is a preview)');
        const q = await queueDeploy(ctx.client, slug, branch ? { branch } : {}).catch((err: unknown) => {
          if (err instanceof ApiError && err.code === 'source_missing') throw new CliExit(EXIT.failed, NO_SOURCE_HELP);
          throw err;
        });
        if (!ctx.out.json) ctx.out.note(`${q.deduplicated ? 'Already queued' : 'Queued'} ${q.deploy.id} (${q.deploy.environment}, ${q.deploy.branch})`);
        if (opts.follow === false) return ctx.out.json ? ctx.out.data(q) : undefined;
        finish(ctx.out, await follow(ctx, slug, q.deploy));
      },
    },
    {
      name: 'link',
      description: 'set where the project builds from (repository, branch, command, output); without options, show it',
      project: true,
      options: () => [
        new Option('--repo <url>', 'the git repository (https://...)'),
        new Option('-b, --branch <branch>', 'the production branch (every other branch deploys as a preview)'),
        new Option('--command <command>', 'the build command, run with sh -c ("" for none: the tree is the output)'),
        new Option('--output <dir>', 'the directory the build leaves the site in, relative to the repository'),
      ],
      async run({ client, out, project }, _args, opts) {
        const slug = project();
        const patch: BuildSettingsPatch = {
          ...(opts.repo !== undefined ? { repoUrl: String(opts.repo) } : {}),
          ...(opts.branch !== undefined ? { defaultBranch: String(opts.branch) } : {}),
          ...(opts.command !== undefined ? { buildCommand: String(opts.command) } : {}),
          ...(opts.output !== undefined ? { outputDir: String(opts.output) } : {}),
        };
        const changed = Object.keys(patch).length > 0;
        const { settings } = changed ? await updateSettings(client, slug, patch) : await getSettings(client, slug);
        if (out.json) return out.data({ settings });
        if (changed) out.note(`Linked ${slug}`);
        if (settings.repoUrl === null) out.print(`${slug} has no build source: cx link --repo <url>, or cx deploy --prebuilt <dir>`);
        else
          out.table(
            [
              { setting: 'repository', value: settings.repoUrl },
              { setting: 'branch', value: settings.defaultBranch },
              { setting: 'command', value: settings.buildCommand || '(none: the tree is the output)' },
              { setting: 'output', value: settings.outputDir },
            ],
            ['setting', 'value'],
          );
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

/** `cx deploy --prebuilt <dir>`: packed (prebuilt.ts), sent with its progress, and the deploy it made printed. */
async function deployDirectory(ctx: Ctx, slug: string, dir: string, opts: Opts): Promise<void> {
  const { out, io, client } = ctx;
  let packed: Awaited<ReturnType<typeof packDir>>;
  try {
    packed = await packDir(dir);
  } catch (err) {
    throw new CliExit(EXIT.failed, (err as Error).message);
  }
  try {
    if (!out.json) out.note(`Packed ${packed.files} files (${packed.bytes} bytes) from ${dir}`);
    const progress = uploadProgress(io, out, packed.size);
    const query = { ...(opts.preview ? { environment: 'preview' as const } : {}), ...(opts.branch ? { branch: String(opts.branch) } : {}) };
    const { deploy } = await deployPrebuilt(client, slug, query, uploadBody(packed, progress.sent)).catch((err: unknown) => {
      progress.done(false);
      throw err;
    });
    progress.done(true);
    finish(out, deploy);
  } finally {
    await packed.remove();
  }
}
