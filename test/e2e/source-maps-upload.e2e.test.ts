import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OWNER, startConsoleService, type ConsoleService } from './support/console-service.ts';
import { buildApp, builtFile, sentryCli, sentryUpload } from '../support/sentry-cli.ts';

/**
 * Source maps from builds made elsewhere, against the whole service as `npm start` runs it (one port: the edge relays
 * the API's routes, bodies up to 1 MB): the real `sentry-cli sourcemaps inject` + `upload --url <the service>` with a
 * `cx_live_` key holding `sourcemaps:write`, a map spanning several chunks, and `cx sourcemaps upload` with a CLI token.
 */
const CX = fileURLToPath(new URL('../../cli/bin/cx.mjs', import.meta.url));
let svc: ConsoleService;
let cookie: string;
let slug: string;
let projectId: string;

async function api(method: string, p: string, body?: unknown, headers: Record<string, string> = { cookie, 'sec-fetch-site': 'same-origin' }) {
  const res = await fetch(`${svc.base}/v1${p}`, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json().catch(() => null) };
}

function cx(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CX, ...args], {
      env: { PATH: process.env.PATH ?? '', SERVICE_BASE_URL: svc.base, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c));
    child.stderr.on('data', (c: Buffer) => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
  });
}

type Row = { served_path: string | null; debug_id: string | null; size: number };
async function maps(): Promise<Row[]> {
  return (await svc.running.platform.db.query<Row>('SELECT served_path, debug_id, size FROM source_maps WHERE project_id = $1', [projectId])).rows;
}

beforeAll(async () => {
  svc = await startConsoleService();
  const res = await fetch(`${svc.base}/v1/auth/sign-in`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(OWNER) });
  cookie = res.headers
    .getSetCookie()
    .map((c) => c.split(';')[0]!)
    .find((c) => c.startsWith('cx_session='))!;
  const created = await api('POST', '/projects', { name: 'Uploads', slug: 'uploads' });
  expect(created.status).toBe(201);
  slug = created.body.project.slug;
  projectId = created.body.project.id;
}, 180_000);
afterAll(async () => svc?.running.stop());

describe('source maps from builds made elsewhere, through the single-process service', () => {
  it('sentry-cli inject + upload with a sourcemaps:write key: a 1.5 MB map in several chunks, kept with its debug id', async () => {
    const key = await api('POST', `/projects/${slug}/keys`, { kind: 'live', name: 'ci', scopes: ['sourcemaps:write'] });
    expect(key.status).toBe(201);
    const app = await buildApp('e2e', { padBytes: 1_500_000 });
    const inject = await sentryCli(['sourcemaps', 'inject', app.dist], { cwd: app.root });
    expect(inject.code, inject.stderr).toBe(0);
    const built = await builtFile(app.dist);

    const run = await sentryUpload(svc.base, key.body.key.token, slug, app.dist, { org: 'my-company' });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toContain('File processing complete');
    const kept = (await maps()).find((m) => m.debug_id === built.debugId);
    expect(kept).toMatchObject({ served_path: built.servedPath });
    expect(kept!.size).toBeGreaterThan(1_500_000);
  });

  it('cx sourcemaps upload with a CLI token: maps with and without debug ids, by served path; a refused key exits 3', async () => {
    const start = await api('POST', '/cli/device', {}, {});
    expect(start.status).toBe(200);
    expect((await api('POST', '/cli/device/approve', { user_code: start.body.user_code })).status).toBe(200);
    const token = (await api('POST', '/cli/device/token', { device_code: start.body.device_code }, {})).body.access_token as string;

    const plain = await buildApp('cx-plain');
    const plainFile = await builtFile(plain.dist);
    const up = await cx(['sourcemaps', 'upload', '-p', slug, plain.dist], { SERVICE_TOKEN: token });
    expect(up.code, up.stderr).toBe(0);
    expect(up.stdout).toMatch(/Uploaded: kept 1 source map for uploads/);
    expect((await maps()).some((m) => m.served_path === plainFile.servedPath && m.debug_id === null)).toBe(true);

    const injected = await buildApp('cx-injected');
    expect((await sentryCli(['sourcemaps', 'inject', injected.dist], { cwd: injected.root })).code).toBe(0);
    const injectedFile = await builtFile(injected.dist);
    const json = await cx(['sourcemaps', 'upload', '-p', slug, injected.dist, '--json'], { SERVICE_TOKEN: token });
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ state: 'ok', stored: 1 });
    expect((await maps()).some((m) => m.served_path === injectedFile.servedPath && m.debug_id === injectedFile.debugId)).toBe(true);

    const weak = await api('POST', `/projects/${slug}/keys`, { kind: 'live', name: 'weak', scopes: ['errors:read'] });
    const refused = await cx(['sourcemaps', 'upload', '-p', slug, injected.dist], { SERVICE_TOKEN: weak.body.key.token });
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain('sourcemaps:write');
    const empty = await cx(['sourcemaps', 'upload', '-p', slug, injected.root + '/src'], { SERVICE_TOKEN: token });
    expect(empty.code).toBe(1);
    expect(empty.stderr).toContain('no source map');
  });
});
