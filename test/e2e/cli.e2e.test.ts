import { execFileSync, spawn } from 'node:child_process';
import http from 'node:http';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpsReceiver, type HttpsReceiver } from '../support/https-receiver.ts';
import { OWNER, sendErrors, startConsoleService, type ConsoleService } from './support/console-service.ts';

/**
 * The real `cx` binary (cli/bin/cx.mjs, as `npx cx` runs it from a clone) against the whole service as `npm start`
 * runs it: device login approved through the API as the console does, projects, a deploy followed to ready and a
 * failed one's exit code, the build log, error triage, keys, a webhook test, `--json` parsed, and the exit codes.
 */
const BIN = fileURLToPath(new URL('../../cli/bin/cx.mjs', import.meta.url));
let svc: ConsoleService;
let receiver: HttpsReceiver;
let home: string;
let cookie: string;
let repo: string;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run cx to its end; `onStderr` sees stderr as it comes (the login code). */
function cx(args: string[], opts: { env?: Record<string, string>; onStderr?: (text: string) => void } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { PATH: process.env.PATH ?? '', HOME: home, XDG_CONFIG_HOME: path.join(home, 'config'), SERVICE_BASE_URL: svc.base, ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c));
    child.stderr.on('data', (c: Buffer) => {
      stderr += c;
      opts.onStderr?.(stderr);
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
  });
}
const json = (r: Run) => JSON.parse(r.stdout);

async function api(method: string, p: string, body?: unknown) {
  const res = await fetch(`${svc.base}/v1${p}`, {
    method,
    headers: { cookie, 'content-type': 'application/json', 'sec-fetch-site': 'same-origin' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json().catch(() => null) };
}

function git(cwd: string, ...args: string[]) {
  return execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { cwd, encoding: 'utf8' }).trim();
}

beforeAll(async () => {
  receiver = await startHttpsReceiver();
  svc = await startConsoleService({ webhookCa: receiver.cert });
  home = await mkdtemp(path.join(os.tmpdir(), 'cx-home-'));
  const res = await fetch(`${svc.base}/v1/auth/sign-in`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(OWNER) });
  cookie = res.headers
    .getSetCookie()
    .map((c) => c.split(';')[0]!)
    .find((c) => c.startsWith('cx_session='))!;
  repo = await mkdtemp(path.join(os.tmpdir(), 'cx-repo-'));
  git(repo, 'init', '-q', '-b', 'main');
  await writeFile(path.join(repo, 'build.sh'), 'echo "building with cx"; mkdir -p out; echo "<h1>cx</h1>" > out/index.html');
  git(repo, 'add', '.');
  git(repo, 'commit', '-q', '-m', 'first');
}, 120_000);
afterAll(async () => {
  await svc?.running.stop();
  await receiver?.close();
});

describe('the cx CLI', () => {
  it('refuses before login with exit 3, and a wrong command with exit 2', async () => {
    const who = await cx(['whoami']);
    expect(who.code).toBe(3);
    expect(who.stderr).toMatch(/cx login/);
    expect((await cx(['frobnicate'])).code).toBe(2);
    const help = await cx(['deploy', '--help']);
    expect([help.code, help.stdout]).toEqual([0, expect.stringContaining('--branch')]);
  });

  it('logs in with the device flow (approved as the console does), keeps the token 0600, and knows who it is', async () => {
    let approved = false;
    const login = await cx(['login', '--no-browser'], {
      onStderr: (text) => {
        const code = /code in the console: (\S+)/.exec(text)?.[1];
        if (code && !approved) {
          approved = true;
          void api('POST', '/cli/device/approve', { user_code: code });
        }
      },
    });
    expect(login.code, login.stderr).toBe(0);
    expect(login.stderr).toMatch(/\/cli\/device\?user_code=/);
    expect(login.stdout).toMatch(`Signed in as ${OWNER.email}`);
    const file = path.join(home, 'config', 'cx', 'credentials.json');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(json(await cx(['whoami', '--json'])).user.email).toBe(OWNER.email);
  });

  it('creates and lists projects, deploys and follows the build to ready, and a failed build exits 4', { timeout: 180_000 }, async () => {
    const created = await cx(['projects', 'create', 'CLI shop', '--slug', 'cli-shop', '--json']);
    expect(created.code, created.stderr).toBe(0);
    expect(json(created).project.slug).toBe('cli-shop');
    expect(json(await cx(['projects', 'list', '--json'])).projects.map((p: { slug: string }) => p.slug)).toContain('cli-shop');
    expect((await cx(['projects', 'list'])).stdout).toMatch(/SLUG\s+NAME[\s\S]*cli-shop\s+CLI shop/);
    expect((await cx(['projects', 'open', 'cli-shop'])).stdout.trim()).toBe(`${svc.base}/projects/cli-shop`);
    expect((await api('PATCH', '/projects/cli-shop/deploys/settings', { repoUrl: repo, buildCommand: 'sh build.sh', outputDir: 'out' })).status).toBe(200);

    const ok = await cx(['deploy', '-p', 'cli-shop']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/building with cx/);
    expect(ok.stdout).toMatch(/Ready dep_/);

    await api('PATCH', '/projects/cli-shop/deploys/settings', { buildCommand: 'echo "about to fail"; exit 3' });
    const bad = await cx(['deploy', '-p', 'cli-shop', '--json']);
    expect(bad.code).toBe(4);
    const lines = bad.stdout.trim().split('\n');
    expect(lines.some((l) => l.includes('about to fail'))).toBe(true);
    const final = JSON.parse(bad.stdout.slice(bad.stdout.indexOf('{\n')));
    expect(final.deploy).toMatchObject({ status: 'failed', failureReason: 'build_failed', exitCode: 3 });

    const list = json(await cx(['deploys', 'list', '-p', 'cli-shop', '--json']));
    expect(list.data.map((d: { status: string }) => d.status)).toEqual(['failed', 'ready']);
    const logs = await cx(['logs', '-p', 'cli-shop', list.data[1].id]);
    expect([logs.code, logs.stdout]).toEqual([0, expect.stringContaining('building with cx')]);
    expect((await cx(['logs', '-p', 'cli-shop', list.data[0].id])).code).toBe(4);

    // Roll back to the ready deploy; cancel one that is only queued.
    const rolled = await cx(['deploys', 'rollback', '-p', 'cli-shop', list.data[1].id]);
    expect([rolled.code, rolled.stdout]).toEqual([0, expect.stringContaining('live again')]);
    await api('PATCH', '/projects/cli-shop/deploys/settings', { buildCommand: 'echo slow; sleep 60' });
    const queued = json(await cx(['deploy', '-p', 'cli-shop', '--no-follow', '--json']));
    const cancel = await cx(['deploys', 'cancel', '-p', 'cli-shop', queued.deploy.id, '--json']);
    expect(cancel.code, cancel.stderr + cancel.stdout).toBe(0);
    await api('PATCH', '/projects/cli-shop/deploys/settings', { buildCommand: 'sh build.sh' });

    // Deploy hooks: create (the URL shown once), list, delete.
    const hook = json(await cx(['hooks', 'create', 'main pushes', '-p', 'cli-shop', '--branch', 'main', '--json']));
    expect(hook.hook.url).toMatch(/\/v1\/hooks\/cxhook_/);
    expect((await cx(['hooks', 'list', '-p', 'cli-shop'])).stdout).toMatch(/main pushes\s+main/);
    expect((await cx(['hooks', 'delete', '-p', 'cli-shop', hook.hook.id])).code).toBe(0);
    expect(json(await cx(['hooks', 'list', '-p', 'cli-shop', '--json'])).hooks).toEqual([]);
  });

  it('deploys a built directory with --prebuilt, refuses a deploy without a source saying how to set one, and links one (issue 42)', async () => {
    expect((await cx(['projects', 'create', 'CLI static', '--slug', 'cli-static'])).code).toBe(0);
    const none = await cx(['deploy', '-p', 'cli-static']);
    expect([none.code, none.stderr]).toEqual([1, expect.stringMatching(/cx link --repo[\s\S]*cx deploy --prebuilt/)]);
    expect(json(await cx(['deploys', 'list', '-p', 'cli-static', '--json'])).data).toEqual([]);

    const dist = await mkdtemp(path.join(os.tmpdir(), 'cx-dist-'));
    await writeFile(path.join(dist, 'index.html'), '<h1>uploaded with cx</h1>');
    const up = await cx(['deploy', '-p', 'cli-static', '--prebuilt', dist]);
    expect(up.code, up.stderr).toBe(0);
    expect(up.stderr).toMatch(/Packed 1 files[\s\S]*Uploaded/);
    expect(up.stdout).toMatch(/Ready dep_\w+ at /);
    const listed = json(await cx(['deploys', 'list', '-p', 'cli-static', '--json'])).data;
    expect(listed).toMatchObject([{ status: 'ready', environment: 'production', trigger: { kind: 'upload' } }]);
    const logs = await cx(['logs', '-p', 'cli-static', listed[0].id]);
    expect(logs.stdout).toMatch(/prebuilt upload: 1 files/);

    const linked = await cx(['link', '-p', 'cli-static', '--repo', repo, '--command', 'sh build.sh', '--output', 'out', '--json']);
    expect(linked.code, linked.stderr).toBe(0);
    expect(json(linked).settings).toMatchObject({ repoUrl: repo, buildCommand: 'sh build.sh', outputDir: 'out' });
    expect((await cx(['link', '-p', 'cli-static'])).stdout).toMatch(/command\s+sh build\.sh/);
  });

  it("opens the uploaded deploy's protected host with cx previews: a share link, a password, revoked, then off (issue 42)", async () => {
    const listed = json(await cx(['deploys', 'list', '-p', 'cli-static', '--json'])).data;
    // Its own host is protected (new projects are) until cx previews opens it: a share link, then off.
    expect((await cx(['previews', 'status', '-p', 'cli-static'])).stdout).toBe('Previews are protected: share links only\n');
    const share = await cx(['previews', 'share', '-p', 'cli-static', '--deploy', listed[0].id, '--json']);
    expect(share.code, share.stderr).toBe(0);
    const link = new URL(json(share).link.url);
    // fetch sends no Host of its own choosing: node:http does.
    const onDeployHost = (p: string, headers: Record<string, string> = {}) =>
      new Promise<{ status: number; headers: http.IncomingHttpHeaders }>((resolve, reject) => {
        const req = http.get(`${svc.base}${p}`, { headers: { host: link.host, ...headers } }, (res) => {
          res.resume();
          resolve({ status: res.statusCode ?? 0, headers: res.headers });
        });
        req.on('error', reject);
      });
    expect((await onDeployHost('/')).status).toBe(401);
    const opened = await onDeployHost(link.pathname);
    expect(opened.status).toBe(303);
    const withCookie = { cookie: opened.headers['set-cookie']![0]!.split(';')[0]! };
    expect((await onDeployHost('/', withCookie)).status).toBe(200);
    const pw = await cx(['previews', 'password', '-p', 'cli-static'], { env: { CX_PREVIEW_PASSWORD: 'correct horse battery' } });
    expect([pw.code, pw.stdout]).toEqual([0, expect.stringContaining('the password or a share link opens them')]);
    expect((await cx(['previews', 'links', '-p', 'cli-static'])).stdout).toContain(json(share).link.id);
    expect((await cx(['previews', 'revoke', '-p', 'cli-static', json(share).link.id])).code).toBe(0);
    await expect.poll(async () => (await onDeployHost('/', withCookie)).status).toBe(401);
    expect((await cx(['previews', 'off', '-p', 'cli-static'])).stdout).toBe('Previews are public\n');
    await expect.poll(async () => (await onDeployHost('/')).status).toBe(200);
  }, 180_000);

  it('makes a key (shown once), lists it, triages errors sent with it, tests webhooks, then logs out', async () => {
    const key = await cx(['keys', 'create', '-p', 'cli-shop', '--kind', 'ingest', '--name', 'from cx', '--json']);
    expect(key.code, key.stderr).toBe(0);
    const token = json(key).key.token as string;
    expect(token).toMatch(/^cak_live_/);
    expect((await cx(['keys', 'list', '-p', 'cli-shop'])).stdout).toMatch(/from cx/);
    await sendErrors(svc.base, token, [
      {
        name: 'TypeError',
        message: 'cart is undefined',
        stack: 'TypeError: cart is undefined\n    at checkout (src/cart.ts:4:2)\n    at run (node_modules/x/index.js:1:1)',
      },
    ]);
    let issues: Array<{ groupId: string }> = [];
    for (let i = 0; i < 60 && !issues.length; i++) {
      issues = json(await cx(['errors', 'list', '-p', 'cli-shop', '--json'])).data;
      if (!issues.length) await new Promise((r) => setTimeout(r, 250));
    }
    expect(issues).toHaveLength(1);
    const show = await cx(['errors', 'show', '-p', 'cli-shop', issues[0]!.groupId]);
    expect(show.stdout).toMatch(/TypeError: cart is undefined/);
    expect(show.stdout).toMatch(/> at checkout \(src\/cart\.ts:4:2\)/);
    expect(show.stdout).toMatch(/\n {2}at run \(node_modules/);
    expect((await cx(['errors', 'ignore', '-p', 'cli-shop', issues[0]!.groupId])).stdout).toMatch(/1 issue ignored/);
    expect((await cx(['errors', 'reopen', '-p', 'cli-shop', issues[0]!.groupId])).stdout).toMatch(/1 issue reopened/);
    expect((await cx(['errors', 'resolve', '-p', 'cli-shop', issues[0]!.groupId])).stdout).toMatch(/1 issue resolved/);
    expect(json(await cx(['errors', 'list', '-p', 'cli-shop', '--status', 'resolved', '--json'])).data).toHaveLength(1);
    expect((await cx(['errors', 'list', '-p', 'cli-shop', '--status', 'nonsense'])).code).toBe(2);
    // Webhooks: an endpoint the console made (to a receiver that refuses), a test event, its delivery log, a replay.
    receiver.respond = () => ({ status: 500 });
    const endpoint = await api('POST', '/projects/cli-shop/webhooks', { url: receiver.url, events: ['webhook.test'] });
    expect(endpoint.status, JSON.stringify(endpoint.body)).toBe(201);
    expect((await cx(['webhooks', 'test', '-p', 'cli-shop'])).code).toBe(0);
    let attempts: Array<{ deliveryId: string }> = [];
    for (let i = 0; i < 60 && !attempts.length; i++) {
      attempts = json(await cx(['webhooks', 'deliveries', '-p', 'cli-shop', endpoint.body.endpoint.id, '--json'])).deliveries;
      if (!attempts.length) await new Promise((r) => setTimeout(r, 250));
    }
    expect(attempts.length).toBeGreaterThan(0);
    expect((await cx(['webhooks', 'deliveries', '-p', 'cli-shop', endpoint.body.endpoint.id])).stdout).toMatch(/webhook\.test/);
    const replay = await cx(['webhooks', 'replay', '-p', 'cli-shop', attempts[0]!.deliveryId]);
    expect([replay.code, replay.stdout]).toEqual([0, expect.stringContaining('Replay')]);

    const revoke = await cx(['keys', 'revoke', '-p', 'cli-shop', json(key).key.id]);
    expect(revoke.code).toBe(0);

    const stored = JSON.parse(await readFile(path.join(home, 'config', 'cx', 'credentials.json'), 'utf8')) as { token: string };
    expect((await cx(['logout'])).stdout).toMatch(/Signed out/);
    expect((await cx(['whoami'])).code).toBe(3);
    // SERVICE_TOKEN works without a stored login (CI).
    const ci = await cx(['whoami', '--json'], { env: { SERVICE_TOKEN: stored.token } });
    expect([ci.code, json(ci).user.email]).toEqual([0, OWNER.email]);
  });

  it('packs into a tarball that installs offline (one bundled file, no dependencies) and runs', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'cx-pack-'));
    const root = fileURLToPath(new URL('../..', import.meta.url));
    try {
      const tgz = execFileSync('npm', ['pack', '-w', 'cli', '--pack-destination', dir, '--silent'], { cwd: root, encoding: 'utf8' }).trim().split('\n').pop()!;
      await writeFile(path.join(dir, 'package.json'), '{"name":"try-cx","version":"1.0.0","private":true}');
      execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--silent', path.join(dir, tgz)], { cwd: dir, encoding: 'utf8' });
      const version = execFileSync(path.join(dir, 'node_modules', '.bin', 'cx'), ['--version'], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } });
      expect(version.trim()).toBe('0.1.0');
      const manifest = JSON.parse(await readFile(path.join(dir, 'node_modules', 'cx-cli', 'package.json'), 'utf8'));
      expect(manifest.dependencies ?? {}).toEqual({});
    } finally {
      // The build the pack made: the clone runs the source again.
      await rm(path.join(root, 'cli', 'dist'), { recursive: true, force: true });
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
