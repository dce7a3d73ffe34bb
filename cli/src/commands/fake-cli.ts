import { createApiClient } from '../../../schemas/api/client.ts';
import { ApiError, type Client } from '../client.ts';
import { run } from '../main.ts';
import type { Io } from './command.ts';

/**
 * The command-line unit tests' `cx`: the real parser and commands (main.ts's run), a service that answers from a table
 * and records what it was asked, and a terminal that keeps what was printed. Nothing listens, sleeps or opens a browser.
 */

/**
 * Answers by `METHOD path` (the path as the command asks it, query string included): a value; an ApiError, thrown as
 * the service's refusal; or a function of the body and of how many calls the route had before (which may throw).
 */
export type Answers = Record<string, unknown>;

export interface Call {
  method: string;
  path: string;
  body: unknown;
  token: string | undefined;
}

export interface CxRun {
  code: number;
  stdout: string;
  stderr: string;
  calls: Call[];
  /** Each wait the command asked for, in ms. */
  sleeps: number[];
  /** URLs it opened in the browser. */
  opened: string[];
}

export const BASE = 'https://cx.example';
export const TOKEN = 'cx_cli_unit';

export interface CxOptions {
  /** Over the defaults: the service at BASE, SERVICE_TOKEN TOKEN, no stored login (a config dir that does not exist). */
  env?: Record<string, string | undefined>;
  /** stdout and stderr are a terminal (colour and the spinner stay off: NO_COLOR is set unless `env` unsets it). */
  tty?: boolean;
}

export async function cx(args: string[], answers: Answers = {}, opts: CxOptions = {}): Promise<CxRun> {
  const result: CxRun = { code: -1, stdout: '', stderr: '', calls: [], sleeps: [], opened: [] };
  const seen = new Map<string, number>();
  const connect = (base: string, token: string | undefined): Client => {
    const answer = async (method: string, path: string, body: unknown) => {
      result.calls.push({ method, path, body, token });
      const key = `${method} ${path}`;
      if (!(key in answers)) throw new Error(`the fake service has no answer for ${key}`);
      const n = seen.get(key) ?? 0;
      seen.set(key, n + 1);
      const a = answers[key];
      const value = typeof a === 'function' ? (a as (body: unknown, n: number) => unknown)(body, n) : a;
      if (value instanceof ApiError) throw value;
      return value as never;
    };
    // Answers keyed by `METHOD path`, the path below /v1 for the API's routes (as a reader writes them), from the root
    // for sentry-cli's /api/0/ upload routes.
    const api = createApiClient((method, path, body) => answer(method, path.replace(/^\/v1(?=\/)/, ''), body));
    return { base: base.replace(/\/+$/, ''), token, api };
  };
  const io: Io = {
    stdout: { write: (s: string) => (result.stdout += s), isTTY: opts.tty },
    stderr: { write: (s: string) => (result.stderr += s), isTTY: opts.tty },
    env: { SERVICE_BASE_URL: BASE, SERVICE_TOKEN: TOKEN, XDG_CONFIG_HOME: '/nonexistent/cx-unit', NO_COLOR: '1', ...opts.env },
    connect,
    sleep: async (ms) => void result.sleeps.push(ms),
    openUrl: (url) => result.opened.push(url) > 0,
  };
  result.code = await run(['node', 'cx', ...args], io);
  return result;
}

/** The service's refusal as the real client throws it. */
export const refusal = (status: number, code: string, message = code) => new ApiError(status, code, message);
