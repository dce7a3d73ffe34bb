import { readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { freePort } from './support/console-service.ts';
import { gitRepoWith } from '../support/git-repo.ts';
import { eventually } from './support/http-client.ts';
import { json, killStarted, npmRun, OWNER, run, runService, signIn, startService } from './support/service-process.ts';
import { lockDataDir } from '../../platform/data-dir/data-dir-lock.ts';

/**
 * One owner per data directory (issue 36), with the real command `npm start` runs (service/start.sh: `node dist/service/main.js`, compiled by service/build.mjs): a second
 * start on a data directory in use is refused, names the holder and touches nothing; the first keeps serving; after a
 * normal stop and after a SIGKILL of the holder, the next start opens the same data (an issue, a deploy, a key).
 * Before the lock, the refused second start had opened PGlite beside the first and every later start died with
 * `RuntimeError: Aborted()`.
 */
afterAll(killStarted);

const readProc = (pid: number, file: string) => {
  try {
    return readFileSync(`/proc/${pid}/${file}`, 'utf8');
  } catch {
    return '';
  }
};
/** Every process under `pid` (Linux: /proc/<pid>/task/<tid>/children). */
function descendants(pid: number): number[] {
  const children = readProc(pid, `task/${pid}/children`).split(' ').filter(Boolean).map(Number);
  return children.flatMap((c) => [c, ...descendants(c)]);
}

/** What must survive every stop: the issue with its count, the ready deploy, the ingest key. */
async function expectDataIntact(base: string, expected: { issueId: string; deployId: string; keyId: string }) {
  const session = await signIn(base);
  const issue = await json(base, `/v1/projects/locked/errors/${expected.issueId}`, session);
  expect(issue.status).toBe(200);
  expect(issue.body.issue.count).toBe(3);
  const deploy = await json(base, `/v1/projects/locked/deploys/${expected.deployId}`, session);
  expect(deploy.status).toBe(200);
  expect(deploy.body.deploy.status).toBe('ready');
  const keys = await json(base, '/v1/projects/locked/keys', session);
  expect(keys.body.keys.map((k: { id: string }) => k.id)).toContain(expected.keyId);
}

it('a second start on a data directory in use is refused and the data survives every stop', { timeout: 420_000 }, async () => {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'e2e-lock-'));
  const repo = gitRepoWith({ 'build.sh': 'mkdir -p out; echo "<h1>locked</h1>" > out/index.html' });

  // The first start: an owner, a project with a key, an issue of three events and a ready deploy.
  const first = await startService(dataDir);
  const session = await signIn(first.base);
  const project = await json(first.base, '/v1/projects', session, {
    method: 'POST',
    body: { name: 'locked', slug: 'locked', environmentHosts: { production: ['app.example.com'], preview: [] } },
  });
  expect(project.status).toBe(201);
  const key = await json(first.base, '/v1/projects/locked/keys', session, { method: 'POST', body: { kind: 'ingest', name: 'k' } });
  expect(key.status).toBe(201);
  const post = () =>
    fetch(`${first.base}/v1/errors/i`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key.body.key.token}`, 'content-type': 'application/json', origin: 'https://app.example.com' },
      body: JSON.stringify({ batch: [{ name: 'Error', message: 'lock test', stack: 'Error: lock test\n    at run (src/lock.ts:1:1)' }] }),
    }).then((r) => r.status);
  await eventually('the edge knows the key', async () => ((await post()) === 202 ? true : undefined), 60_000, 200);
  expect([await post(), await post()]).toEqual([202, 202]);
  const issueId = await eventually(
    'the issue counts three',
    async () => {
      const list = await json(first.base, '/v1/projects/locked/errors', session);
      return list.body.data?.[0]?.count === 3 ? (list.body.data[0].id as string) : undefined;
    },
    60_000,
    200,
  );
  expect(
    (
      await json(first.base, '/v1/projects/locked/deploys/settings', session, {
        method: 'PATCH',
        body: { repoUrl: repo, buildCommand: 'sh build.sh', outputDir: 'out' },
      })
    ).status,
  ).toBe(200);
  const deploy = await json(first.base, '/v1/projects/locked/deploys', session, { method: 'POST', body: {} });
  expect(deploy.status).toBe(202);
  const deployId = deploy.body.deploy.id as string;
  const built = await eventually(
    'the build ends',
    async () => {
      const d = (await json(first.base, `/v1/projects/locked/deploys/${deployId}`, session)).body.deploy;
      return ['ready', 'failed', 'canceled'].includes(d.status) ? d : undefined;
    },
    120_000,
    250,
  );
  expect(built).toMatchObject({ status: 'ready' });
  const expected = { issueId, deployId, keyId: key.body.key.id as string };

  // A second start on the same directory (another port): refused at once, naming the holder.
  const second = runService([], { DATA_DIR: dataDir, PORT: String(await freePort()), HOST: '127.0.0.1' });
  expect(await second.exited).toBe(75);
  expect(second.stderr()).toContain(`is in use by pid ${first.child.pid}`);
  expect(second.stderr()).toContain('npm start (every role');
  expect(second.stderr()).not.toContain('adapters chosen');
  // Every command that opens the data directory is refused the same way.
  const unprocessable = run(['service/unprocessable-cli.ts', 'list'], { DATA_DIR: dataDir });
  expect(await unprocessable.exited).toBe(75);
  expect(unprocessable.stderr()).toContain(`pid ${first.child.pid}`);
  // The first keeps serving, untouched.
  await expectDataIntact(first.base, expected);

  // A normal stop of the holder, then a start: the same data.
  first.child.kill('SIGTERM');
  expect(await first.exited).toBe(0);
  const third = await startService(dataDir);
  await expectDataIntact(third.base, expected);

  // SIGKILL of the holder leaves no stale lock: the next start opens the data at once.
  third.child.kill('SIGKILL');
  await third.exited;
  const fourth = await startService(dataDir);
  await expectDataIntact(fourth.base, expected);
  fourth.child.kill('SIGTERM');
  expect(await fourth.exited).toBe(0);
});

it("SIGTERM to `npm start`'s own process (a supervisor's or a shell's stop) stops the service and frees the data directory", { timeout: 180_000 }, async () => {
  // npm runs the script through sh; with tsx in between, the signal stopped at sh and the service kept serving,
  // orphaned, holding the lock. The scripts exec node itself, so the signal is the service's.
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'e2e-npm-start-'));
  const port = await freePort();
  const npm = npmRun('start', [], {
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    OWNER_EMAIL: OWNER.email,
    OWNER_PASSWORD: OWNER.password,
    MALLOC_TRIM_THRESHOLD_: '262144',
  });
  await eventually(
    'npm start answers',
    async () => ((await fetch(`http://127.0.0.1:${port}/livez`).catch(() => undefined))?.status === 200 ? true : undefined),
    120_000,
    200,
  );
  // service/start.sh set glibc's malloc thresholds for the service (issue 44), an operator's own value kept.
  const service = descendants(npm.child.pid!).find((pid) => readProc(pid, 'cmdline').includes('dist/service/main.js'));
  expect(service).toBeDefined();
  const environ = readProc(service!, 'environ').split('\0');
  expect(environ).toContain('MALLOC_MMAP_THRESHOLD_=131072');
  expect(environ).toContain('MALLOC_TRIM_THRESHOLD_=262144');
  npm.child.kill('SIGTERM');
  await npm.exited;
  await eventually(
    'the service has stopped',
    async () => ((await fetch(`http://127.0.0.1:${port}/livez`).catch(() => 'gone')) === 'gone' ? true : undefined),
    30_000,
    200,
  );
  // Stopped, not orphaned: the directory is free at once.
  await (await lockDataDir(dataDir, 'after npm start stopped')).release();
});
