import { describe, expect, it } from 'vitest';
import type { Deploy, LogPage } from '../../../schemas/api/deploys.ts';
import { cx, refusal } from './fake-cli.ts';
import { LOG_POLL_MS } from './deploys.ts';

/**
 * `cx deploy`, `deploys list | rollback | cancel`, `logs`: the build log followed page by page until the deploy ends,
 * exit 4 for a deploy that failed or was canceled, `--json` as one JSON line per log line and the final deploy.
 */
const deploy = (over: Partial<Deploy> = {}): Deploy => ({
  id: 'dep_1',
  projectId: 'prj_1',
  branch: 'main',
  environment: 'production',
  status: 'queued',
  gitSha: null,
  trigger: { kind: 'api', id: null },
  createdAt: '2025-01-02T03:04:05.000Z',
  startedAt: null,
  finishedAt: null,
  failureReason: null,
  exitCode: null,
  framework: null,
  url: null,
  guard: null,
  ...over,
});
const line = (seq: number, stream: string, text: string) => ({ seq, at: '2025-01-02T03:04:06.000Z', stream, line: text });
/** Two pages of log, an empty one in between (still building), then done. */
const pages: LogPage[] = [
  { status: 'building', lines: [line(0, 'system', 'cloning'), line(1, 'stdout', 'building with cx')], nextSeq: 2, done: false },
  { status: 'building', lines: [], nextSeq: 2, done: false },
  { status: 'ready', lines: [line(2, 'stderr', 'a warning')], nextSeq: 3, done: true },
];
const logAnswers = (final: Deploy) => ({
  'GET /projects/shop/deploys/dep_1/logs?from=0': pages[0],
  'GET /projects/shop/deploys/dep_1/logs?from=2': (_: unknown, n: number) => pages[n + 1],
  'GET /projects/shop/deploys/dep_1': { deploy: final },
});

describe('cx deploy', () => {
  it('queues on the branch, follows the log to ready and prints where it is served', async () => {
    const ready = deploy({ status: 'ready', url: 'https://shop.example' });
    const r = await cx(['deploy', '-p', 'shop', '--branch', 'feat'], {
      'POST /projects/shop/deploys': { deploy: deploy({ branch: 'feat', environment: 'preview' }), deduplicated: false },
      ...logAnswers(ready),
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.calls[0]).toMatchObject({ method: 'POST', path: '/projects/shop/deploys', body: { branch: 'feat' } });
    expect(r.stderr).toBe('Queued dep_1 (preview, feat)\n');
    expect(r.stdout).toBe('cloning\nbuilding with cx\na warning\nReady dep_1 at https://shop.example\n');
    expect(r.sleeps).toEqual([LOG_POLL_MS, LOG_POLL_MS]);
  });

  it('a failed build exits 4 with its reason and exit code; --json prints each log line, then the deploy', async () => {
    const failed = deploy({ status: 'failed', failureReason: 'build_failed', exitCode: 3 });
    const answers = { 'POST /projects/shop/deploys': { deploy: deploy(), deduplicated: true }, ...logAnswers(failed) };
    const r = await cx(['deploy', '-p', 'shop'], answers);
    expect(r.code).toBe(4);
    expect(r.calls[0]!.body).toEqual({});
    expect(r.stderr).toBe('Already queued dep_1 (production, main)\n');
    expect(r.stdout.split('\n').at(-2)).toBe('Failed dep_1: build_failed (exit 3)');

    const j = await cx(['deploy', '-p', 'shop', '--json'], answers);
    expect(j.code).toBe(4);
    expect(j.stderr).toBe('');
    const out = j.stdout.split('\n');
    expect(out.slice(0, 3).map((l) => JSON.parse(l).line)).toEqual(['cloning', 'building with cx', 'a warning']);
    expect(JSON.parse(out.slice(3).join('\n'))).toEqual({ deploy: failed });
  });

  it('a canceled deploy exits 4 too', async () => {
    const r = await cx(['deploy', '-p', 'shop'], {
      'POST /projects/shop/deploys': { deploy: deploy(), deduplicated: false },
      ...logAnswers(deploy({ status: 'canceled' })),
    });
    expect([r.code, r.stdout.split('\n').at(-2)]).toEqual([4, 'Canceled dep_1']);
  });

  it('--no-follow only queues: --json prints the queued answer', async () => {
    const queued = { deploy: deploy(), deduplicated: false };
    const r = await cx(['deploy', '-p', 'shop', '--no-follow', '--json'], { 'POST /projects/shop/deploys': queued });
    expect([r.code, JSON.parse(r.stdout), r.calls.length]).toEqual([0, queued, 1]);
    const text = await cx(['deploy', '-p', 'shop', '--no-follow'], { 'POST /projects/shop/deploys': queued });
    expect([text.code, text.stdout, text.stderr]).toEqual([0, '', 'Queued dep_1 (production, main)\n']);
  });

  it('takes the project from SERVICE_PROJECT, escaped in the path; without one it is a usage error', async () => {
    const r = await cx(
      ['deploy', '--no-follow'],
      { 'POST /projects/a%2Fb/deploys': { deploy: deploy(), deduplicated: false } },
      { env: { SERVICE_PROJECT: 'a/b' } },
    );
    expect(r.code, r.stderr).toBe(0);
    const none = await cx(['deploy']);
    expect([none.code, none.stderr, none.calls]).toEqual([2, 'which project? pass --project <slug> (or set SERVICE_PROJECT)\n', []]);
  });
});

describe('cx deploys and cx logs', () => {
  it('deploys list prints a table, and --json the page', async () => {
    const page = {
      data: [deploy({ status: 'ready' }), deploy({ id: 'dep_0', status: 'failed', branch: 'feat', environment: 'preview' })],
      hasMore: false,
      nextCursor: null,
    };
    const r = await cx(['deploys', 'list', '-p', 'shop'], { 'GET /projects/shop/deploys': page });
    expect(r.stdout).toBe(
      'ID     STATUS  ENVIRONMENT  BRANCH  CREATED\n' +
        'dep_1  ready   production   main    2025-01-02T03:04:05.000Z\n' +
        'dep_0  failed  preview      feat    2025-01-02T03:04:05.000Z\n',
    );
    expect(JSON.parse((await cx(['deploys', 'list', '-p', 'shop', '--json'], { 'GET /projects/shop/deploys': page })).stdout)).toEqual(page);
  });

  it('rollback and cancel post to the deploy and say what happened', async () => {
    const rolled = await cx(['deploys', 'rollback', '-p', 'shop', 'dep_1'], { 'POST /projects/shop/deploys/dep_1/rollback': { deploy: deploy() } });
    expect([rolled.code, rolled.stdout, rolled.calls[0]!.body]).toEqual([0, 'Rolled back: dep_1 is live again\n', undefined]);
    const canceled = await cx(['deploys', 'cancel', '-p', 'shop', 'dep_1', '--json'], {
      'POST /projects/shop/deploys/dep_1/cancel': { deploy: deploy({ status: 'canceled' }) },
    });
    expect(JSON.parse(canceled.stdout).deploy.status).toBe('canceled');
    expect((await cx(['deploys', 'cancel', '-p', 'shop', 'dep_1'], { 'POST /projects/shop/deploys/dep_1/cancel': {} })).stdout).toBe('Canceled dep_1\n');
  });

  it('rollback without a deploy id is a usage error', async () => {
    const r = await cx(['deploys', 'rollback', '-p', 'shop']);
    expect([r.code, r.calls]).toEqual([2, []]);
    expect(r.stderr).toMatch(/missing required argument 'deployId'/);
  });

  it('logs follows an existing deploy to its end: 0 when ready, 4 when failed', async () => {
    const ready = await cx(['logs', '-p', 'shop', 'dep_1'], logAnswers(deploy({ status: 'ready' })));
    expect([ready.code, ready.stdout, ready.stderr]).toEqual([0, 'cloning\nbuilding with cx\na warning\n', 'dep_1 ready\n']);
    const failed = await cx(['logs', '-p', 'shop', 'dep_1'], logAnswers(deploy({ status: 'failed' })));
    expect([failed.code, failed.stderr]).toEqual([4, 'dep_1 failed\n']);
  });

  it('a deploy the service does not know exits 1 with its message', async () => {
    const r = await cx(['logs', '-p', 'shop', 'dep_9'], { 'GET /projects/shop/deploys/dep_9': refusal(404, 'not_found', 'deploy not found') });
    expect([r.code, r.stderr]).toEqual([1, 'cx: deploy not found (not_found)\n']);
  });
});
