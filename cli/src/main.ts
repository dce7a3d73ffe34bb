import { spawn } from 'node:child_process';
import { Command, CommanderError, Option } from 'commander';
import { ApiError, createClient } from './client.ts';
import { account } from './commands/account.ts';
import { CliExit, type CommandDef, type Ctx, EXIT, type Family, type Io } from './commands/command.ts';
import { deploys } from './commands/deploys.ts';
import { errors } from './commands/errors.ts';
import { hooks } from './commands/hooks.ts';
import { env } from './commands/env.ts';
import { keys } from './commands/keys.ts';
import { previews } from './commands/previews.ts';
import { projects } from './commands/projects.ts';
import { sourcemaps } from './commands/sourcemaps.ts';
import { webhooks } from './commands/webhooks.ts';
import { resolveAuth } from './credentials.ts';
import { createOut } from './output.ts';

/**
 * `cx`, the service's command line (issue 27): the same public `/v1` routes the console calls, with a `cx_cli_` token
 * from device login (RFC 8628) or SERVICE_TOKEN. Every command takes `--json` (the API's answer as it is) and prints a
 * table otherwise. Exit codes scripts can rely on are EXIT. The commands live in commands/, one module per family;
 * this file builds the parser (commander) from their definitions and turns what a command throws into an exit code.
 */
export { EXIT };

/** In the order `cx --help` lists them. */
export const FAMILIES: Family[] = [account, projects, deploys, hooks, env, previews, errors, keys, webhooks, sourcemaps];

/** The process's own terminal, environment, network and browser. */
export function processIo(): Io {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    connect: createClient,
    sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
    openUrl(url) {
      const cmd = process.platform === 'darwin' ? 'open' : process.platform === 'win32' ? 'explorer' : 'xdg-open';
      try {
        spawn(cmd, [url], { stdio: 'ignore', detached: true })
          .on('error', () => undefined)
          .unref();
        return true;
      } catch {
        return false;
      }
    },
  };
}

export function program(io: Io = processIo()): Command {
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
    .configureOutput({ writeOut: (s) => void io.stdout.write(s), writeErr: (s) => void io.stderr.write(s) })
    .showHelpAfterError();
  for (const family of FAMILIES) for (const def of family.commands) add(p, family, def, io);
  return p;
}

/** One definition as a commander command, under its group (made on first use, with the family's help line). */
function add(p: Command, family: Family, def: CommandDef, io: Io): void {
  const [group, verb] = def.name.split(' ') as [string, string | undefined];
  let parent = p;
  if (verb) {
    parent = p.commands.find((c) => c.name() === group) ?? p.command(group).description(family.groups?.[group] ?? '');
  }
  const c = parent.command(def.args ? `${verb ?? group} ${def.args}` : (verb ?? group));
  if (def.description) c.description(def.description);
  if (def.project) c.addOption(new Option('-p, --project <slug>', 'the project (default: SERVICE_PROJECT)'));
  for (const o of def.options?.() ?? []) c.addOption(o);
  // commander passes the positional values, then the options, then the command itself.
  c.action(async (...given: unknown[]) => {
    const cmd = given.at(-1) as Command;
    const args = given.slice(0, -2).flat() as string[];
    const auth = await resolveAuth(io.env);
    const ctx: Ctx = {
      client: io.connect(auth.baseUrl, auth.token),
      out: createOut({ json: !!cmd.optsWithGlobals().json }, io.stdout, io.stderr, io.env),
      io,
      project: () => {
        const slug = (cmd.opts().project as string | undefined) ?? io.env.SERVICE_PROJECT;
        if (!slug) throw new CliExit(EXIT.usage, 'which project? pass --project <slug> (or set SERVICE_PROJECT)');
        return slug;
      },
    };
    await def.run(ctx, args, cmd.opts());
  });
}

export async function run(argv: string[], io: Io = processIo()): Promise<number> {
  const p = program(io);
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
      if (err.message) io.stderr.write(`${err.message}\n`);
      return err.code;
    }
    if (err instanceof ApiError) {
      if (argv.includes('--json')) io.stdout.write(`${JSON.stringify({ error: err.code, message: err.message })}\n`);
      else
        io.stderr.write(
          `cx: ${err.message} (${err.code})${err.code === 'unauthorized' ? '; run cx login' : ''}${err.retryAfterSec ? `; retry in ${err.retryAfterSec} s` : ''}\n`,
        );
      return err.status === 401 || err.status === 403 ? EXIT.auth : EXIT.failed;
    }
    io.stderr.write(`cx: ${(err as Error).message}\n`);
    return EXIT.failed;
  }
}

// `tsx cli/src/main.ts ...` (npm run cx): run. The installed `cx` (bin/cx.mjs) imports this module and calls run().
if (/cli[/\\]src[/\\]main\.ts$/.test(process.argv[1] ?? '')) void run(process.argv).then((code) => process.exit(code));
