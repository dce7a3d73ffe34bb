import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/**
 * Where the CLI keeps its token: `SERVICE_TOKEN` when set (CI), otherwise `<config dir>/cx/credentials.json`, written
 * with mode 0600 in a 0700 directory. The config dir is `$XDG_CONFIG_HOME`, else `~/.config` (`%APPDATA%` on Windows).
 * `SERVICE_BASE_URL` picks the service (default http://localhost:8080); a stored login remembers its service.
 */
export interface Stored {
  baseUrl: string;
  token: string;
  email?: string;
}

export const DEFAULT_BASE_URL = 'http://localhost:8080';

export function configDir(env = process.env): string {
  const base = env.XDG_CONFIG_HOME || (process.platform === 'win32' && env.APPDATA) || path.join(os.homedir(), '.config');
  return path.join(base, 'cx');
}
const file = (env = process.env) => path.join(configDir(env), 'credentials.json');

export async function readStored(env = process.env): Promise<Stored | undefined> {
  try {
    const s = JSON.parse(await readFile(file(env), 'utf8')) as Stored;
    return typeof s.token === 'string' && typeof s.baseUrl === 'string' ? s : undefined;
  } catch {
    return undefined;
  }
}

export async function writeStored(s: Stored, env = process.env): Promise<string> {
  await mkdir(configDir(env), { recursive: true, mode: 0o700 });
  await writeFile(file(env), `${JSON.stringify(s, null, 2)}\n`, { mode: 0o600 });
  await chmod(file(env), 0o600);
  return file(env);
}

export async function forget(env = process.env): Promise<boolean> {
  const had = (await readStored(env)) !== undefined;
  await rm(file(env), { force: true });
  return had;
}

/** The service and token a command uses: SERVICE_BASE_URL and SERVICE_TOKEN win over the stored login. */
export async function resolveAuth(env = process.env): Promise<{ baseUrl: string; token: string | undefined; source: 'env' | 'stored' | 'none' }> {
  const stored = await readStored(env);
  const baseUrl = env.SERVICE_BASE_URL || stored?.baseUrl || DEFAULT_BASE_URL;
  if (env.SERVICE_TOKEN) return { baseUrl, token: env.SERVICE_TOKEN, source: 'env' };
  if (stored && (!env.SERVICE_BASE_URL || env.SERVICE_BASE_URL.replace(/\/+$/, '') === stored.baseUrl.replace(/\/+$/, '')))
    return { baseUrl, token: stored.token, source: 'stored' };
  return { baseUrl, token: undefined, source: 'none' };
}
