import type { Option } from 'commander';
import type { Client } from '../client.ts';
import type { Out, Sink } from '../output.ts';

/**
 * The one shape of a `cx` command. Each family module (projects.ts, deploys.ts, ...) exports a Family: its commands as
 * data (name, arguments, options) and a `run` that sees only a Ctx, so main.ts builds the parser from the list and a
 * unit test runs any command against a client that answers from a table and an Io that keeps what was printed.
 * Each API call a command makes is one small function of the family module taking the client: moving the CLI onto
 * the typed client of schemas/api/ changes that one line per call.
 */

/** Exit codes scripts can rely on (README "The `cx` command line"). */
export const EXIT = { ok: 0, failed: 1, usage: 2, auth: 3, deployFailed: 4 } as const;

/** Ends a command with an exit code; the message (when not empty) goes to stderr. */
export class CliExit extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** The world a command touches: the process's own in `cx`, a recording one in unit tests. */
export interface Io {
  stdout: Sink;
  stderr: Sink;
  env: NodeJS.ProcessEnv;
  /** A client of the service at `base` speaking with `token`. */
  connect(base: string, token: string | undefined): Client;
  sleep(ms: number): Promise<void>;
  /** Opens a URL in the browser; false when that failed. */
  openUrl(url: string): boolean;
}

export interface Ctx {
  client: Client;
  out: Out;
  io: Io;
  /** The project's slug (`-p`, else SERVICE_PROJECT); without one the command ends with a usage error (exit 2). */
  project(): string;
}

/** Options by commander's camelCase name (`--url-prefix` is `urlPrefix`). */
export type Opts = Record<string, unknown>;

export interface CommandDef {
  /** What follows `cx`: one verb (`deploy`) or a group and its verb (`projects list`). */
  name: string;
  /** Positional arguments in commander's notation (`<name>`, `<groupIds...>`); a missing one is a usage error. */
  args?: string;
  description?: string;
  /** Takes `-p, --project <slug>`. */
  project?: boolean;
  /** Its other options, made anew for each program (commander keeps parse state on the command, not the option). */
  options?: () => Option[];
  /** `args` are the positional values in order, a variadic one spread at the end. */
  run(ctx: Ctx, args: string[], opts: Opts): Promise<void>;
}

export interface Family {
  /** The help line of each group this family's commands sit under (`projects` for `projects list`). */
  groups?: Record<string, string>;
  commands: CommandDef[];
}
