/** Which build of the service made something (a backup's manifest): package.json's version and, in a git clone, the commit. */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { SOURCE_ROOT } from '../source-root.ts';

export interface ServiceBuild {
  version?: string;
  commit?: string;
}

const ROOT = SOURCE_ROOT;

export async function serviceBuild(): Promise<ServiceBuild> {
  const out: ServiceBuild = {};
  try {
    const pkg = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as { version?: unknown };
    if (typeof pkg.version === 'string') out.version = pkg.version;
  } catch {
    // an install without its package.json: no version to say
  }
  try {
    const { stdout } = await promisify(execFile)('git', ['rev-parse', 'HEAD'], { cwd: ROOT, timeout: 5_000 });
    if (/^[0-9a-f]{40,64}$/.test(stdout.trim())) out.commit = stdout.trim();
  } catch {
    // not a git clone (an image, a tarball), or no git: the version alone
  }
  return out;
}
