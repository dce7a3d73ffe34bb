import { spawn } from 'node:child_process';
import os from 'node:os';
import { Command, CommanderError, Option } from 'commander';
import type { WhoamiAnswer, DeviceStartAnswer, DeviceTokenAnswer } from '../../schemas/api/accounts.ts';
import type { DeployPage, DeployAnswer, LogPage, QueuedDeployAnswer, Deploy, DeployHookList, CreatedDeployHookAnswer } from '../../schemas/api/deploys.ts';
import type { BulkIssuesAnswer, IssueAnswer, IssuePage } from '../../schemas/api/errors.ts';
import type { ApiKeyList, CreatedKeyAnswer } from '../../schemas/api/keys.ts';
import type { ProjectAnswer, ProjectList } from '../../schemas/api/projects.ts';
import type { AttemptList } from '../../schemas/api/webhooks.ts';
import { ApiError, createClient, type Client } from './client.ts';
import { forget, resolveAuth, writeStored } from './credentials.ts';
import { createOut, type Out } from './output.ts';
import { bundleOf, collectSourceMaps, uploadBundle } from './sourcemaps.ts';

/**
 * `cx`, the service's command line (issue 27): the same public `/v1` routes the console calls, with a `cx_cli_` token
 * from device login (RFC 8628) or SERVICE_TOKEN. Every command takes `--json` (the API's answer as it is) and prints a
 * table otherwise. Exit codes scripts can rely on are EXIT below.
 */
export const EXIT = { ok: 0, failed: 1, usage: 2, auth: 3, deployFailed: 4 } as const;

class CliExit extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

interface Ctx {
  client: Client;
  out: Out;
}

async function context(cmd: Command): Promise<Ctx> {
  const opts = cmd.optsWithGlobals() as { json?: boolean };
  const auth = await resolveAuth();
  return { client: createClient(auth.baseUrl, auth.token), out: createOut({ json: !!opts.json }) };
}

function projectOf(cmd: Command): string {
  const p = (cmd.optsWithGlobals() as { project?: string }).project ?? process.env.SERVICE_PROJECT;
  if (!p) throw new CliExit(EXIT.usage, 'which project? pass --project <slug> (or set SERVICE_PROJECT)');
  return encodeURIComponent(p);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Open a URL in the browser, only when it is the service's own https page. */
function openBrowser(url: string, base: string): boolean {
  const u = new URL(url);
  if (u.protocol !== 'https:' || u.origin !== new URL(base).origin || !process.stdout.isTTY) return false;
  const cmd = process.platform === 'darwin' ? 'open' : process.platform === 'win32' ? 'explorer' : 'xdg-open';
  try {
    spawn(cmd, [url], { stdio: 'ignore', detached: true })
      .on('error', () => undefined)
      .unref();
    return true;
  } catch {
    return false;
  }
}

// ---- account -----------------------------------------------------------------------------------------------------

async function login(cmd: Command): Promise<void> {
  const { client, out } = await context(cmd);
  const opts = cmd.opts() as { browser: boolean };
  const start = await client.call<DeviceStartAnswer>('POST', '/cli/device', { client_name: `cx on ${os.hostname()}`.slice(0, 100) });
  const opened = opts.browser && openBrowser(start.verification_uri_complete, client.base);
  out.note(`Confirm this code in the console: ${out.paint('bold', start.user_code)}`);
  out.note(`${opened ? 'Opened' : 'Open'} ${start.verification_uri_complete}`);
  let interval = start.interval * 1000;
  const deadline = Date.now() + start.expires_in * 1000;
  const spin = out.spinner('waiting for approval');
  try {
    while (Date.now() < deadline) {
      await sleep(interval);
      try {
        const t = await client.call<DeviceTokenAnswer>('POST', '/cli/device/token', { device_code: start.device_code });
        const me = await createClient(client.base, t.access_token).call<WhoamiAnswer>('GET', '/cli/whoami');
        const where = await writeStored({ baseUrl: client.base, token: t.access_token, email: me.user.email });
        spin.stop();
        if (out.json) out.data({ user: me.user, baseUrl: client.base, credentials: where });
        else out.print(`Signed in as ${out.paint('bold', me.user.email)} to ${client.base} (token kept in ${where})`);
        return;
      } catch (err) {
        if (err instanceof ApiError && err.code === 'authorization_pending') continue;
        if (err instanceof ApiError && err.code === 'slow_down') {
          interval += 5000;
          continue;
        }
        throw err;
      }
    }
    throw new CliExit(EXIT.failed, 'the code expired before it was approved; run cx login again');
  } finally {
    spin.stop();
  }
}

async function whoami(cmd: Command): Promise<void> {
  const { client, out } = await context(cmd);
  const me = await client.call<WhoamiAnswer>('GET', '/cli/whoami');
  if (out.json) return out.data(me);
  out.print(`${me.user.email} on ${client.base}`);
}

// ---- projects ----------------------------------------------------------------------------------------------------

async function projectsList(cmd: Command) {
  const { client, out } = await context(cmd);
  const r = await client.call<ProjectList>('GET', '/projects');
  if (out.json) return out.data(r);
  out.table(
    r.projects.map((p) => ({ slug: p.slug, name: p.name, branch: p.defaultBranch })),
    ['slug', 'name', 'branch'],
  );
}

async function projectsCreate(name: string, cmd: Command) {
  const { client, out } = await context(cmd);
  const slug = (cmd.opts() as { slug?: string }).slug;
  const r = await client.call<ProjectAnswer>('POST', '/projects', { name, ...(slug ? { slug } : {}) });
  if (out.json) return out.data(r);
  out.print(`Created ${out.paint('bold', r.project.slug)}: ${client.base}/projects/${r.project.slug}`);
}

async function projectsOpen(slug: string, cmd: Command) {
  const { client, out } = await context(cmd);
  const url = `${client.base}/projects/${encodeURIComponent(slug)}`;
  if (out.json) return out.data({ url });
  out.print(url);
}

// ---- deploys -----------------------------------------------------------------------------------------------------

const FINISHED = new Set(['ready', 'failed', 'canceled']);

/** Print the build log from `from` until the deploy finished; answers its final state. */
async function follow(ctx: Ctx, slug: string, deploy: Deploy): Promise<Deploy> {
  const { client, out } = ctx;
  let next = 0;
  const spin = out.spinner(`${deploy.id} queued`);
  try {
    for (;;) {
      const page = await client.call<LogPage>('GET', `/projects/${slug}/deploys/${deploy.id}/logs?from=${next}`);
      if (page.lines.length) spin.stop();
      for (const l of page.lines) {
        if (out.json) out.print(JSON.stringify(l));
        else out.print(l.stream === 'system' ? out.paint('dim', l.line) : l.stream === 'stderr' ? out.paint('warn', l.line) : l.line);
      }
      next = page.nextSeq;
      if (page.done) break;
      if (!page.lines.length) spin.update(`${deploy.id} ${page.status}`);
      await sleep(500);
    }
  } finally {
    spin.stop();
  }
  return (await client.call<DeployAnswer>('GET', `/projects/${slug}/deploys/${deploy.id}`)).deploy;
}

function finish(out: Out, d: Deploy): void {
  if (out.json) out.data({ deploy: d });
  else if (d.status === 'ready') out.print(`${out.paint('ok', 'Ready')} ${d.id}${d.url ? ` at ${d.url}` : ''}`);
  else
    out.print(
      `${out.paint('bad', d.status === 'failed' ? 'Failed' : 'Canceled')} ${d.id}${d.failureReason ? `: ${d.failureReason}` : ''}${d.exitCode !== null ? ` (exit ${d.exitCode})` : ''}`,
    );
  if (d.status !== 'ready') throw new CliExit(EXIT.deployFailed, '');
}

async function deploy(cmd: Command) {
  const ctx = await context(cmd);
  const slug = projectOf(cmd);
  const opts = cmd.opts() as { branch?: string; follow: boolean };
  const q = await ctx.client.call<QueuedDeployAnswer>('POST', `/projects/${slug}/deploys`, opts.branch ? { branch: opts.branch } : {});
  if (!ctx.out.json) ctx.out.note(`${q.deduplicated ? 'Already queued' : 'Queued'} ${q.deploy.id} (${q.deploy.environment}, ${q.deploy.branch})`);
  if (!opts.follow) return ctx.out.json ? ctx.out.data(q) : undefined;
  finish(ctx.out, await follow(ctx, slug, q.deploy));
}

async function deploysList(cmd: Command) {
  const { client, out } = await context(cmd);
  const r = await client.call<DeployPage>('GET', `/projects/${projectOf(cmd)}/deploys`);
  if (out.json) return out.data(r);
  out.table(
    r.data.map((d) => ({ id: d.id, status: d.status, environment: d.environment, branch: d.branch, created: d.createdAt })),
    ['id', 'status', 'environment', 'branch', 'created'],
  );
}

async function deployAction(action: 'rollback' | 'cancel', id: string, cmd: Command) {
  const { client, out } = await context(cmd);
  const r = await client.call<Record<string, unknown>>('POST', `/projects/${projectOf(cmd)}/deploys/${encodeURIComponent(id)}/${action}`, {});
  if (out.json) return out.data(r);
  out.print(action === 'rollback' ? `Rolled back: ${id} is live again` : `Canceled ${id}`);
}

async function logs(id: string, cmd: Command) {
  const ctx = await context(cmd);
  const slug = projectOf(cmd);
  const d = (await ctx.client.call<DeployAnswer>('GET', `/projects/${slug}/deploys/${encodeURIComponent(id)}`)).deploy;
  const final = await follow(ctx, slug, d);
  if (!FINISHED.has(final.status)) return;
  if (!ctx.out.json) ctx.out.note(`${final.id} ${final.status}`);
  if (final.status !== 'ready') throw new CliExit(EXIT.deployFailed, '');
}

async function hooksList(cmd: Command) {
  const { client, out } = await context(cmd);
  const r = await client.call<DeployHookList>('GET', `/projects/${projectOf(cmd)}/deploys/hooks`);
  if (out.json) return out.data(r);
  out.table(
    r.hooks.map((h) => ({ id: h.id, name: h.name, branch: h.branch, created: h.createdAt })),
    ['id', 'name', 'branch', 'created'],
  );
}

async function hooksCreate(name: string, cmd: Command) {
  const { client, out } = await context(cmd);
  const branch = (cmd.opts() as { branch?: string }).branch;
  const r = await client.call<CreatedDeployHookAnswer>('POST', `/projects/${projectOf(cmd)}/deploys/hooks`, { name, ...(branch ? { branch } : {}) });
  if (out.json) return out.data(r);
  out.print(`Hook ${r.hook.id} for ${r.hook.branch}. Its URL is shown only now:\n${out.paint('bold', r.hook.url)}`);
}

// ---- errors ------------------------------------------------------------------------------------------------------

async function errorsList(cmd: Command) {
  const { client, out } = await context(cmd);
  const o = cmd.opts() as { status: string; environment?: string; sort: string; limit: string };
  const qs = new URLSearchParams({ status: o.status, sort: o.sort, limit: o.limit, ...(o.environment ? { environment: o.environment } : {}) });
  const r = await client.call<IssuePage>('GET', `/projects/${projectOf(cmd)}/errors?${qs}`);
  if (out.json) return out.data(r);
  out.table(
    r.data.map((i) => ({ id: i.groupId, status: i.status, count: i.count, last: i.lastSeen, issue: `${i.name}: ${i.message}` })),
    ['id', 'status', 'count', 'last', 'issue'],
  );
}

/** A frame is the app's own unless it is a library's, Node's own, or a bundled vendor chunk (as the console folds them). */
const libraryFrame = (line: string) => /node_modules|\(node:|node:internal|<anonymous>|\bnative\b|vendor/.test(line);

async function errorsShow(id: string, cmd: Command) {
  const { client, out } = await context(cmd);
  const r = await client.call<IssueAnswer>('GET', `/projects/${projectOf(cmd)}/errors/${encodeURIComponent(id)}`);
  if (out.json) return out.data(r);
  const i = r.issue as IssueAnswer['issue'] & { suggestion?: string | null; culprit?: string | null };
  out.print(`${out.paint('bold', `${i.name}: ${i.message}`)}`);
  out.print(`${i.status}, ${i.count} events, first ${i.firstSeen}, last ${i.lastSeen}`);
  if (i.culprit) out.print(`culprit: ${i.culprit}`);
  out.print('');
  for (const line of i.stack.split('\n').slice(0, 60)) {
    if (/^\s+at /.test(line)) out.print(libraryFrame(line) ? out.paint('dim', `  ${line.trim()}`) : `${out.paint('ok', '>')} ${line.trim()}`);
    else out.print(line);
  }
  if (i.suggestion) out.print(`\nhint: ${i.suggestion}`);
}

async function errorsAct(action: 'resolve' | 'ignore' | 'reopen', ids: string[], cmd: Command) {
  const { client, out } = await context(cmd);
  const r = await client.call<BulkIssuesAnswer>('POST', `/projects/${projectOf(cmd)}/errors/bulk`, { action, groupIds: ids });
  if (out.json) return out.data(r);
  out.print(`${r.updated.length} issue${r.updated.length === 1 ? '' : 's'} ${action === 'reopen' ? 'reopened' : `${action}d`}`);
}

// ---- keys and webhooks -------------------------------------------------------------------------------------------

async function keysList(cmd: Command) {
  const { client, out } = await context(cmd);
  const r = await client.call<ApiKeyList>('GET', `/projects/${projectOf(cmd)}/keys`);
  if (out.json) return out.data(r);
  out.table(
    r.keys.map((k) => ({ id: k.id, kind: k.kind, name: k.name, key: k.hint, scopes: k.scopes.join(','), revoked: k.revoked ? 'yes' : '' })),
    ['id', 'kind', 'name', 'key', 'scopes', 'revoked'],
  );
}

async function keysCreate(cmd: Command) {
  const { client, out } = await context(cmd);
  const o = cmd.opts() as { kind: string; name?: string; scope?: string[] };
  const body = o.kind === 'ingest' ? { kind: o.kind, name: o.name } : { kind: o.kind, name: o.name, scopes: o.scope ?? [] };
  const r = await client.call<CreatedKeyAnswer>('POST', `/projects/${projectOf(cmd)}/keys`, body);
  if (out.json) return out.data(r);
  out.print(`Key ${r.key.id} (${r.key.kind}). Its token is shown only now:\n${out.paint('bold', r.key.token)}`);
  if (r.key.dsn) out.print(`Sentry DSN: ${r.key.dsn}`);
}

async function keysRevoke(id: string, cmd: Command) {
  const { client, out } = await context(cmd);
  const r = await client.call<unknown>('DELETE', `/projects/${projectOf(cmd)}/keys/${encodeURIComponent(id)}`);
  if (out.json) return out.data(r);
  out.print(`Revoked ${id}`);
}

async function webhookDeliveries(endpointId: string, cmd: Command) {
  const { client, out } = await context(cmd);
  const r = await client.call<AttemptList>('GET', `/projects/${projectOf(cmd)}/webhooks/${encodeURIComponent(endpointId)}/deliveries`);
  if (out.json) return out.data(r);
  out.table(
    r.deliveries.map((d) => ({
      delivery: d.deliveryId,
      event: d.event,
      attempt: d.attempt,
      status: d.status,
      code: d.responseCode,
      error: d.error,
      at: d.startedAt,
    })),
    ['delivery', 'event', 'attempt', 'status', 'code', 'error', 'at'],
  );
}

async function webhookReplay(deliveryId: string, cmd: Command) {
  const { client, out } = await context(cmd);
  const r = await client.call<unknown>('POST', `/projects/${projectOf(cmd)}/webhooks/deliveries/${encodeURIComponent(deliveryId)}/replay`, {});
  if (out.json) return out.data(r);
  out.print(`Replay of ${deliveryId} queued`);
}

async function webhookTest(cmd: Command) {
  const { client, out } = await context(cmd);
  const r = await client.call<unknown>('POST', `/projects/${projectOf(cmd)}/webhooks/test`, {});
  if (out.json) return out.data(r);
  out.print('webhook.test sent to the endpoints subscribed to it');
}

// ---- source maps -------------------------------------------------------------------------------------------------

async function sourcemapsUpload(dir: string, cmd: Command) {
  const { client, out } = await context(cmd);
  const project = decodeURIComponent(projectOf(cmd));
  const o = cmd.opts() as { urlPrefix?: string };
  let collected: Awaited<ReturnType<typeof collectSourceMaps>>;
  try {
    collected = await collectSourceMaps(dir);
  } catch (err) {
    throw new CliExit(EXIT.usage, (err as Error).message);
  }
  for (const s of collected.skipped) out.note(`skipped ${s}`);
  if (!collected.maps.length) throw new CliExit(EXIT.failed, `no source map under ${dir} (*.map files, or JS with an inline sourceMappingURL)`);
  const withId = collected.maps.filter((m) => m.debugId).length + collected.sources.filter((s) => s.debugId).length;
  const spin = out.spinner(`uploading ${collected.maps.length} source map${collected.maps.length === 1 ? '' : 's'}`);
  let answer: Awaited<ReturnType<typeof uploadBundle>>;
  try {
    answer = await uploadBundle(client, project, bundleOf(collected, { project, urlPrefix: o.urlPrefix }));
  } finally {
    spin.stop();
  }
  if (out.json) return out.data(answer);
  if (answer.state !== 'ok') throw new CliExit(EXIT.failed, `the service did not keep the maps (${answer.state}): ${answer.detail ?? ''}`);
  out.print(`${out.paint('ok', 'Uploaded:')} ${answer.detail ?? ''}`);
  if (!withId) out.note('none of these files carries a debug id: maps are found by the path a site serves the file at');
}

// ---- the program -------------------------------------------------------------------------------------------------

export function program(): Command {
  const p = new Command('cx')
    .description('The service from the command line: sign in, deploy and follow the build, triage errors, manage keys and webhooks.')
    .version('0.1.0')
    .option('--json', 'print the API answer as JSON')
    .addHelpText(
      'after',
      `
Examples:
  $ cx login                          sign in through the console (device code)
  $ cx projects list
  $ cx deploy -p shop --branch main   queue a deploy and follow its build log (exit 4 if it fails)
  $ cx errors list -p shop --sort lastSeen
  $ cx errors resolve -p shop grp_1 grp_2
  $ cx sourcemaps upload -p shop ./dist   source maps of a build made elsewhere

Environment: SERVICE_BASE_URL (default http://localhost:8080), SERVICE_TOKEN (a cx_cli_ token, for CI), SERVICE_PROJECT.
Exit codes: 0 ok, 1 the service refused or is unreachable, 2 usage, 3 not signed in or not allowed, 4 the deploy failed or was canceled.`,
    )
    .showHelpAfterError();
  const project = () => new Option('-p, --project <slug>', 'the project (default: SERVICE_PROJECT)');

  p.command('login')
    .description('sign in with a device code the console approves')
    .option('--no-browser', 'do not open the browser')
    .action((_o, c) => login(c));
  p.command('logout')
    .description('forget the stored token')
    .action(async (_o, c: Command) => {
      const out = createOut({ json: !!c.optsWithGlobals().json });
      const had = await forget();
      if (out.json) out.data({ signedOut: had });
      else out.print(had ? 'Signed out' : 'Not signed in');
    });
  p.command('whoami')
    .description('who the token belongs to')
    .action((_o, c) => whoami(c));

  const projects = p.command('projects').description('list, create and open projects');
  projects
    .command('list')
    .description('your projects')
    .action((_o, c) => projectsList(c));
  projects
    .command('create <name>')
    .option('--slug <slug>', 'the URL name')
    .description('create a project')
    .action((n, _o, c) => projectsCreate(n, c));
  projects
    .command('open <slug>')
    .description("print the project's console URL")
    .action((s, _o, c) => projectsOpen(s, c));

  p.command('deploy')
    .description('queue a deploy and follow its build log until it is ready or failed')
    .addOption(project())
    .option('-b, --branch <branch>', "the branch (default: the project's default branch)")
    .option('--no-follow', 'only queue it')
    .action((_o, c) => deploy(c));
  const deploys = p.command('deploys').description('list, roll back and cancel deploys');
  deploys
    .command('list')
    .addOption(project())
    .description('the newest deploys')
    .action((_o, c) => deploysList(c));
  deploys
    .command('rollback <deployId>')
    .addOption(project())
    .description('serve an earlier production deploy again')
    .action((id, _o, c) => deployAction('rollback', id, c));
  deploys
    .command('cancel <deployId>')
    .addOption(project())
    .description('cancel a queued or building deploy')
    .action((id, _o, c) => deployAction('cancel', id, c));
  p.command('logs <deployId>')
    .addOption(project())
    .description("print a deploy's build log, following it until the build ends")
    .action((id, _o, c) => logs(id, c));
  const hooks = p.command('hooks').description('deploy hooks');
  hooks
    .command('list')
    .addOption(project())
    .action((_o, c) => hooksList(c));
  hooks
    .command('create <name>')
    .addOption(project())
    .option('-b, --branch <branch>')
    .description('a hook URL that deploys the branch')
    .action((n, _o, c) => hooksCreate(n, c));
  hooks
    .command('delete <hookId>')
    .addOption(project())
    .action(async (id: string, _o, c: Command) => {
      const { client, out } = await context(c);
      await client.call('DELETE', `/projects/${projectOf(c)}/deploys/hooks/${encodeURIComponent(id)}`);
      if (out.json) out.data({ deleted: id });
      else out.print(`Deleted ${id}`);
    });

  const errors = p.command('errors').description('triage error issues');
  errors
    .command('list')
    .addOption(project())
    .addOption(new Option('--status <status>').choices(['unresolved', 'resolved', 'ignored']).default('unresolved'))
    .addOption(new Option('--environment <env>').choices(['production', 'preview', 'development']))
    .addOption(new Option('--sort <sort>').choices(['count', 'lastSeen']).default('count'))
    .option('--limit <n>', 'at most this many', '25')
    .action((_o, c) => errorsList(c));
  errors
    .command('show <groupId>')
    .addOption(project())
    .description('the stack, your frames marked >')
    .action((id, _o, c) => errorsShow(id, c));
  for (const action of ['resolve', 'ignore', 'reopen'] as const)
    errors
      .command(`${action} <groupIds...>`)
      .addOption(project())
      .action((ids, _o, c) => errorsAct(action, ids, c));

  const keys = p.command('keys').description('project keys');
  keys
    .command('list')
    .addOption(project())
    .action((_o, c) => keysList(c));
  keys
    .command('create')
    .addOption(project())
    .addOption(new Option('--kind <kind>').choices(['ingest', 'live', 'test']).default('ingest'))
    .option('--name <name>')
    .option('--scope <scope...>', 'scopes of an API key, e.g. errors:read deploys:write')
    .description('a new key; its token is shown once')
    .action((_o, c) => keysCreate(c));
  keys
    .command('revoke <keyId>')
    .addOption(project())
    .action((id, _o, c) => keysRevoke(id, c));

  const webhooks = p.command('webhooks').description('webhook deliveries');
  webhooks
    .command('deliveries <endpointId>')
    .addOption(project())
    .description("an endpoint's delivery log")
    .action((id, _o, c) => webhookDeliveries(id, c));
  webhooks
    .command('replay <deliveryId>')
    .addOption(project())
    .action((id, _o, c) => webhookReplay(id, c));
  webhooks
    .command('test')
    .addOption(project())
    .description('send webhook.test')
    .action((_o, c) => webhookTest(c));

  const sourcemaps = p.command('sourcemaps').description("source maps of a build made elsewhere (the service's own builds keep theirs)");
  sourcemaps
    .command('upload <dir>')
    .addOption(project())
    .option('--url-prefix <prefix>', 'where the folder is served: ~/ (any host, the root; default) or e.g. ~/static/js', '~/')
    .description('upload the *.map files under a build folder (and the debug ids and map references of its JS files)')
    .action((dir, _o, c) => sourcemapsUpload(dir, c));
  return p;
}

export async function run(argv: string[]): Promise<number> {
  const p = program();
  // Every command (subcommands too) throws instead of exiting, so usage errors exit 2.
  const override = (c: Command): void => {
    c.exitOverride();
    c.commands.forEach(override);
  };
  override(p);
  try {
    await p.parseAsync(argv);
    return EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    if (err instanceof CliExit) {
      if (err.message) process.stderr.write(`${err.message}\n`);
      return err.code;
    }
    if (err instanceof ApiError) {
      const json = process.argv.includes('--json');
      if (json) process.stdout.write(`${JSON.stringify({ error: err.code, message: err.message })}\n`);
      else
        process.stderr.write(
          `cx: ${err.message} (${err.code})${err.code === 'unauthorized' ? '; run cx login' : ''}${err.retryAfterSec ? `; retry in ${err.retryAfterSec} s` : ''}\n`,
        );
      return err.status === 401 || err.status === 403 ? EXIT.auth : EXIT.failed;
    }
    process.stderr.write(`cx: ${(err as Error).message}\n`);
    return EXIT.failed;
  }
}

// `tsx cli/src/main.ts ...` (npm run cx): run. The installed `cx` (bin/cx.mjs) imports this module and calls run().
if (/cli[/\\]src[/\\]main\.ts$/.test(process.argv[1] ?? '')) void run(process.argv).then((code) => process.exit(code));
