import { useEffect, useRef, useState } from 'preact/hooks';
import { useRoute } from 'preact-iso';
import { call, projectPath } from '../api.ts';
import { DeployCommits, DeployIssues } from './issue-deploys.tsx';
import { Badge, countOf, ErrorNote, Loaded, NewestOlder, PageHead, ShownOnce, SubmitRow, Table, Time, useAction, useFormFrom, useResource } from '../ui.tsx';
import { sizeOf } from '../text.ts';
import type { BuildSettings, Deploy, DeployHook, LogLine } from '../../../schemas/api/deploys.ts';
import { CrashFree, CrashFreeChart, HealthFacts } from './release-health.tsx';
import { BuildVariables } from './build-variables.tsx';
export type { Deploy };

/**
 * Deploys (§3.3, §4.4): the list with states, a deploy of a branch, rollback to an earlier ready production deploy,
 * cancel, the build source, deploy hooks (the URL shown once), and each deploy's build log followed live. The log is
 * read page by page from GET .../deploys/:id/logs?from=<seq> until the build is done: the same JSON route every
 * client has, which works through any proxy (the route's Server-Sent Events form is there for CLIs).
 */
const STATUS_KIND: Record<string, string> = { ready: 'ok', failed: 'bad', canceled: 'muted', building: 'busy', queued: 'busy' };
export function DeployStatus({ d }: { d: Deploy }) {
  return <Badge kind={`deploy ${STATUS_KIND[d.status] ?? ''}`}>{d.status}</Badge>;
}

export function Deploys() {
  const { params } = useRoute();
  const slug = params.slug!;
  const [cursor, setCursor] = useState<string | null>(null);
  const list = useResource(() => call('listDeploys', { params: { slug }, query: { cursor: cursor ?? undefined, limit: 20 } }), [slug, cursor]);
  const live = useResource(() => call('getProject', { params: { slug } }), [slug]);
  // Release health of the last 30 days, per deploy (issue 40): the crash-free columns.
  const health = useResource(() => call('getReleaseHealth', { params: { slug }, query: { interval: 'day' } }), [slug]);
  const healthOf = new Map((health.data?.deploys ?? []).flatMap((h) => (h.deployId ? [[h.deployId, h.totals] as const] : [])));
  const [branch, setBranch] = useState('');
  const act = useAction();
  const liveId = live.data?.project.deploys.live?.id;
  // Follow queued and building deploys until they finish.
  const active = list.data?.data.some((d) => d.status === 'queued' || d.status === 'building');
  useEffect(() => {
    if (!active) return;
    const t = setInterval(() => {
      void list.reload();
      void live.reload();
    }, 2000);
    return () => {
      clearInterval(t);
      // Once more after the last build ended: the round that saw it end may have read the live deploy just before.
      void live.reload();
    };
  }, [active, list.reload, live.reload]);

  const deploy = (e: Event) => {
    e.preventDefault();
    void act.run(async () => {
      await call('queueDeploy', { params: { slug }, body: branch.trim() ? { branch: branch.trim() } : {} });
      setBranch('');
      await list.reload();
    });
  };
  const rollback = (d: Deploy) =>
    act.run(async () => {
      await call('rollbackDeploy', { params: { slug, deployId: d.id } });
      await Promise.all([list.reload(), live.reload()]);
    });
  const cancel = (d: Deploy) =>
    act.run(async () => {
      await call('cancelDeploy', { params: { slug, deployId: d.id } });
      await list.reload();
    });

  return (
    <div>
      <PageHead title="Deploys" />
      <form onSubmit={deploy} class="row-form">
        <label>
          Branch <span class="muted">(empty: the default branch, to production)</span>
          <input name="branch" maxLength={200} value={branch} onInput={(e) => setBranch(e.currentTarget.value)} />
        </label>
        <button type="submit" disabled={act.busy}>
          Deploy
        </button>
      </form>
      <ErrorNote error={act.error} />
      <Loaded r={list} what="deploys">
        {(d) =>
          d.data.length === 0 ? (
            <p class="empty">No deploys yet. Set the build source below, then deploy a branch or call a deploy hook.</p>
          ) : (
            <Table
              caption="Deploys, newest first"
              columns={['Deploy', 'State', 'Branch', 'Commit', 'Trigger', 'Created', 'Crash-free sessions', 'Crash-free users', '']}
            >
              {d.data.map((x) => (
                <tr key={x.id}>
                  <td>
                    <a href={projectPath(slug, `/deploys/${x.id}`)}>
                      <code>{x.id}</code>
                    </a>{' '}
                    <Badge kind={`env ${x.environment}`}>{x.environment}</Badge>
                    {x.id === liveId && <Badge kind="ok">live</Badge>}
                    {x.url && (
                      <>
                        {' '}
                        <a href={x.url} target="_blank" rel="noopener" class="site-link">
                          open<span class="sr-only"> {x.id}</span> ↗
                        </a>
                      </>
                    )}
                  </td>
                  <td>
                    <DeployStatus d={x} />
                    {x.failureReason && <span class="muted"> {x.failureReason}</span>}
                    {x.guard && x.guard.status !== 'superseded' && <span class="muted"> {GUARD_WORD[x.guard.status]}</span>}
                  </td>
                  <td>{x.branch}</td>
                  <td>{x.gitSha ? <code>{x.gitSha.slice(0, 7)}</code> : <span class="muted">–</span>}</td>
                  <td>{x.trigger.kind}</td>
                  <td>
                    <Time iso={x.createdAt} />
                  </td>
                  <td>
                    <CrashFree t={healthOf.get(x.id)} of="sessions" />
                  </td>
                  <td>
                    <CrashFree t={healthOf.get(x.id)} of="users" />
                  </td>
                  <td>
                    {x.environment === 'production' && x.status === 'ready' && x.id !== liveId && (
                      <button type="button" class="secondary small" onClick={() => void rollback(x)} disabled={act.busy}>
                        Roll back to this
                      </button>
                    )}
                    {(x.status === 'queued' || x.status === 'building') && (
                      <button type="button" class="secondary small" onClick={() => void cancel(x)} disabled={act.busy}>
                        Cancel
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </Table>
          )
        }
      </Loaded>
      <NewestOlder cursor={cursor} page={list.data} onCursor={setCursor} />
      <DeployHooks slug={slug} />
      <BuildSource slug={slug} />
      <BuildVariables slug={slug} />
    </div>
  );
}

function DeployHooks({ slug }: { slug: string }) {
  const r = useResource(() => call('listDeployHooks', { params: { slug } }), [slug]);
  const [name, setName] = useState('');
  const [branch, setBranch] = useState('main');
  const [created, setCreated] = useState<{ url: string; branch: string } | null>(null);
  const act = useAction();
  const create = (e: Event) => {
    e.preventDefault();
    void act.run(async () => {
      const res = await call('createDeployHook', { params: { slug }, body: { name, branch } });
      setCreated({ url: res.hook.url, branch: res.hook.branch });
      setName('');
      await r.reload();
    });
  };
  const remove = (h: DeployHook) => {
    if (!confirm(`Delete the hook "${h.name}"? Its URL stops working at once.`)) return;
    void act.run(async () => {
      await call('deleteDeployHook', { params: { slug, id: h.id } });
      await r.reload();
    });
  };
  return (
    <section aria-labelledby="hooks-h" class="panel">
      <h2 id="hooks-h">Deploy hooks</h2>
      <p class="muted">A POST to a hook's URL deploys its branch: production for the default branch, a preview for any other.</p>
      {created && (
        <ShownOnce title={`Deploy hook for ${created.branch}`} items={[{ label: 'URL', value: created.url }]} onDone={() => setCreated(null)}>
          <pre>{`curl -X POST '${created.url}'`}</pre>
        </ShownOnce>
      )}
      <ErrorNote error={act.error} />
      <Loaded r={r} what="deploy hooks">
        {(d) =>
          d.hooks.length === 0 ? (
            <p class="empty">No deploy hooks.</p>
          ) : (
            <ul class="plain">
              {d.hooks.map((h) => (
                <li key={h.id} class="row">
                  <strong>{h.name}</strong> <span class="muted">branch</span> <code>{h.branch}</code> <code class="muted">{h.hint}</code>
                  <span class="muted">
                    last used <Time iso={h.lastUsedAt} />
                  </span>
                  <button type="button" class="danger small" onClick={() => remove(h)} disabled={act.busy} aria-label={`Delete hook ${h.name}`}>
                    Delete
                  </button>
                </li>
              ))}
            </ul>
          )
        }
      </Loaded>
      <form onSubmit={create} class="row-form">
        <label>
          Hook name
          <input name="hookName" required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </label>
        <label>
          Branch
          <input name="hookBranch" required maxLength={200} value={branch} onInput={(e) => setBranch(e.currentTarget.value)} />
        </label>
        <button type="submit" disabled={act.busy}>
          Create hook
        </button>
      </form>
    </section>
  );
}

/** The form edits the build source; variables are BuildVariables' (build-variables.tsx). */
type SourceForm = Omit<BuildSettings, 'env'>;

function BuildSource({ slug }: { slug: string }) {
  const r = useResource(() => call('getDeploySettings', { params: { slug } }), [slug]);
  const [form, setForm] = useFormFrom<NonNullable<typeof r.data>, SourceForm>(r.data, (d) => ({ ...d.settings, repoUrl: d.settings.repoUrl ?? '' }), {
    repoUrl: '',
    defaultBranch: 'main',
    buildCommand: '',
    outputDir: '',
    spa: false,
  });
  const [saved, setSaved] = useState(false);
  const act = useAction();
  const set = (k: keyof SourceForm) => (e: Event) => setForm({ ...form, [k]: (e.currentTarget as HTMLInputElement).value });
  const save = (e: Event) => {
    e.preventDefault();
    setSaved(false);
    void act.run(async () => {
      const { repoUrl, defaultBranch, buildCommand, outputDir, spa } = form;
      r.setData(
        await call('updateDeploySettings', {
          params: { slug },
          body: { repoUrl: repoUrl?.trim() || undefined, defaultBranch, buildCommand, outputDir, spa },
        }),
      );
      setSaved(true);
    });
  };
  return (
    <section aria-labelledby="source-h" class="panel">
      <h2 id="source-h">Build source</h2>
      <Loaded r={r} what="the build source">
        {() => (
          <form onSubmit={save} class="stack">
            <label>
              Repository URL
              <input name="repoUrl" maxLength={2048} placeholder="https://github.com/you/app.git" value={form.repoUrl ?? ''} onInput={set('repoUrl')} />
            </label>
            <div class="grid2">
              <label>
                Default branch (production)
                <input name="defaultBranch" maxLength={200} value={form.defaultBranch} onInput={set('defaultBranch')} />
              </label>
              <label>
                Output directory
                <input name="outputDir" maxLength={1024} value={form.outputDir} onInput={set('outputDir')} />
              </label>
            </div>
            <label>
              Build command <span class="muted">(run with sh -c; empty: the detected framework's, else no build)</span>
              <input name="buildCommand" maxLength={4096} value={form.buildCommand} onInput={set('buildCommand')} />
            </label>
            <label class="check">
              <input type="checkbox" name="spa" checked={form.spa} onChange={(e) => setForm({ ...form, spa: e.currentTarget.checked })} />
              Single-page app: serve <code>/index.html</code> for every path no file answers (client-side routing)
            </label>
            <ErrorNote error={act.error} />
            <SubmitRow label="Save build source" busy={act.busy} saved={saved} />
          </form>
        )}
      </Loaded>
    </section>
  );
}

export function DeployDetail() {
  const { params } = useRoute();
  const slug = params.slug!;
  const deployId = params.deployId!;
  const r = useResource(() => call('getDeploy', { params: { slug, deployId } }), [slug, deployId]);
  const [lines, setLines] = useState<LogLine[]>([]);
  const [done, setDone] = useState(false);
  const [logError, setLogError] = useState<unknown>(null);
  const share = useAction();
  const [shareUrl, setShareUrl] = useState<string | null>(null);
  const bottom = useRef<HTMLDivElement>(null);

  // Follow the log: read from the next seq until the deploy finished and every line is read.
  // biome-ignore lint/correctness/useExhaustiveDependencies: one follow per deploy; reload is a new function each render
  useEffect(() => {
    let stop = false;
    let next = 0;
    setLines([]);
    setDone(false);
    const step = async () => {
      while (!stop) {
        try {
          const page = await call('getDeployLogs', { params: { slug, deployId }, query: { from: next } });
          setLogError(null);
          if (page.lines.length) setLines((l) => [...l, ...page.lines]);
          next = page.nextSeq;
          if (page.done) {
            setDone(true);
            void r.reload();
            return;
          }
          if (page.lines.length) continue;
        } catch (err) {
          setLogError(err);
        }
        await new Promise((res) => setTimeout(res, 1000));
        if (!stop) void r.reload();
      }
    };
    void step();
    return () => {
      stop = true;
    };
  }, [slug, deployId]);
  // biome-ignore lint/correctness/useExhaustiveDependencies: scroll each time lines are added
  useEffect(() => bottom.current?.scrollIntoView({ block: 'nearest' }), [lines.length]);

  const getShare = () =>
    share.run(async () => {
      const res = await call('getDeployLogShare', { params: { slug, deployId } });
      setShareUrl(res.share.url);
    });

  return (
    <div>
      <p>
        <a href={projectPath(slug, '/deploys')}>← Deploys</a>
      </p>
      <Loaded r={r} what="the deploy">
        {({ deploy: d, github: g }) => (
          <>
            <PageHead title={`Deploy ${d.id}`}>
              <button type="button" class="secondary" onClick={() => void getShare()} disabled={share.busy}>
                Share the log
              </button>
            </PageHead>
            <div class="issue-facts">
              <DeployStatus d={d} />
              <Badge kind={`env ${d.environment}`}>{d.environment}</Badge>
              <dl class="facts">
                <div>
                  <dt>Branch</dt>
                  <dd>{d.branch}</dd>
                </div>
                <div>
                  <dt>Commit</dt>
                  <dd>{d.gitSha ? <code>{d.gitSha.slice(0, 12)}</code> : '–'}</dd>
                </div>
                {d.url && (
                  <div>
                    <dt>Site</dt>
                    <dd>
                      <a href={d.url} target="_blank" rel="noopener" class="site-link">
                        {d.url.replace(/^https?:\/\//, '').replace(/\/$/, '')} ↗
                      </a>
                    </dd>
                  </div>
                )}
                <div>
                  <dt>Trigger</dt>
                  <dd>{d.trigger.kind}</dd>
                </div>
                {g && (
                  <div>
                    <dt>GitHub</dt>
                    <dd>
                      {g.pullRequestUrl ? (
                        <a href={g.pullRequestUrl} target="_blank" rel="noopener">
                          Pull request #{g.pullRequest} ↗
                        </a>
                      ) : g.pullRequest !== null ? (
                        `Pull request #${g.pullRequest}`
                      ) : (
                        <code>{g.headSha.slice(0, 12)}</code>
                      )}
                      {g.commitStatus && (
                        <span class="muted" title={g.statusDescription ?? undefined}>
                          {' '}
                          · commit status {g.commitStatus}
                        </span>
                      )}
                    </dd>
                  </div>
                )}
                <div>
                  <dt>Created</dt>
                  <dd>
                    <Time iso={d.createdAt} />
                  </dd>
                </div>
                {d.failureReason && (
                  <div>
                    <dt>Failure</dt>
                    <dd>
                      {d.failureReason}
                      {d.exitCode !== null ? ` (exit ${d.exitCode})` : ''}
                    </dd>
                  </div>
                )}
              </dl>
            </div>
            {d.guard && <GuardVerdict guard={d.guard} />}
          </>
        )}
      </Loaded>
      <DeployHealth slug={slug} deployId={deployId} />
      <DeployIssues slug={slug} deployId={deployId} />
      <DeployCommits slug={slug} deployId={deployId} />
      <ErrorNote error={share.error} />
      {shareUrl && (
        <p class="secret">
          <span class="label">Share link (7 days)</span> <code>{shareUrl}</code>
        </p>
      )}
      <section aria-labelledby="log-h">
        <h2 id="log-h">
          Build log{' '}
          {!done && (
            <span class="badge busy" role="status">
              following…
            </span>
          )}
        </h2>
        <ErrorNote error={logError} />
        <pre class="build-log" aria-live="polite" aria-label="Build log">
          {lines.length === 0 && <span class="muted">{done ? 'This deploy wrote no log.' : 'Waiting for the build to start…'}</span>}
          {lines.map((l) => (
            <div key={l.seq} class={`log-line ${l.stream}`}>
              {l.line}
            </div>
          ))}
          <div ref={bottom} />
        </pre>
      </section>
      {done && <SourceMaps slug={slug} deployId={deployId} />}
    </div>
  );
}

const GUARD_WORD: Record<NonNullable<Deploy['guard']>['status'], string> = {
  watching: 'watching',
  healthy: 'healthy',
  degraded: 'degraded',
  rolled_back: 'rolled back',
  superseded: 'superseded',
};

/**
 * Guarded rollout's verdict (issue 41): watched for a window after going live against the previous deploy; rolled back
 * automatically, degraded, healthy, or no longer live before its window ended. The evidence is the numbers it was
 * judged on.
 */
function GuardVerdict({ guard }: { guard: NonNullable<Deploy['guard']> }) {
  const e = guard.evidence;
  const reasons = e?.reasons.join('; ') ?? '';
  const head =
    guard.status === 'rolled_back'
      ? `Rolled back automatically to ${e?.rolledBackTo ?? 'the previous deploy'}: ${reasons}`
      : guard.status === 'degraded'
        ? `Degraded: ${reasons}${e?.note ? `. ${e.note}` : ''}`
        : guard.status === 'healthy'
          ? `Healthy: no threshold passed in its ${e?.windowMinutes ?? ''}-minute window`
          : guard.status === 'watching'
            ? `Watching: ${Math.floor((e?.elapsedMs ?? 0) / 60_000)} of ${e?.windowMinutes ?? ''} minutes since it went live`
            : `Not judged: ${e?.note ?? 'no longer live before its window ended'}`;
  const kind = guard.status === 'healthy' ? 'ok' : guard.status === 'watching' || guard.status === 'superseded' ? 'muted' : 'bad';
  return (
    <section aria-labelledby="guard-h" class={`guard ${kind}`}>
      <h2 id="guard-h">Guarded rollout</h2>
      <p role="status">
        <Badge kind={`deploy ${kind}`}>{GUARD_WORD[guard.status]}</Badge> {head}
      </p>
      {e && (
        <Table
          caption="What the verdict was taken on"
          class="guard-evidence"
          columns={['', 'This deploy', e.previous.deployId ? `Previous (${e.previous.deployId})` : 'Previous']}
        >
          <tr>
            <td>New issues</td>
            <td class="num">{e.current.newIssues}</td>
            <td class="num">{e.previous.newIssues}</td>
          </tr>
          <tr>
            <td>Error events</td>
            <td class="num">
              {e.current.errorEvents} ({e.current.errorsPerMinute}/min)
            </td>
            <td class="num">
              {e.previous.errorEvents} ({e.previous.errorsPerMinute}/min)
            </td>
          </tr>
          <tr>
            <td>Crash-free sessions</td>
            <td class="num">{e.current.crashFreeSessions === null ? '–' : `${(e.current.crashFreeSessions * 100).toFixed(1)}% of ${e.current.sessions}`}</td>
            <td class="num">{e.previous.crashFreeSessions === null ? '–' : `${(e.previous.crashFreeSessions * 100).toFixed(1)}% of ${e.previous.sessions}`}</td>
          </tr>
        </Table>
      )}
    </section>
  );
}

/**
 * The source maps kept from this deploy's build (issue 37): names, the files they map, debug ids and sizes; never the
 * content, which stays private and resolves this deploy's error frames.
 */
function SourceMaps({ slug, deployId }: { slug: string; deployId: string }) {
  const r = useResource(() => call('listDeploySourceMaps', { params: { slug, deployId } }), [slug, deployId]);
  return (
    <section aria-labelledby="maps-h">
      <h2 id="maps-h">Source maps</h2>
      <Loaded r={r} what="the source maps">
        {({ maps }) =>
          maps.length === 0 ? (
            <p class="empty">This build kept no source maps: its errors show the stack as the browser sent it.</p>
          ) : (
            <>
              <p class="muted">
                {countOf(maps.length, 'map')}, {sizeOf(maps.reduce((n, m) => n + m.size, 0))} in all, kept privately to show this deploy's errors in their
                original source. Its sites answer a <code>.map</code> as missing unless the project opts in to serving them.
              </p>
              <Table caption="Source maps kept from this build" class="source-maps" columns={['File', 'Map', 'Debug ID', 'Size']}>
                {maps.map((m) => (
                  <tr key={m.mapName}>
                    <td>{m.servedPath ? <code>{m.servedPath}</code> : <span class="muted">–</span>}</td>
                    <td>
                      <code>{m.mapName}</code>
                    </td>
                    <td>{m.debugId ? <code class="debug-id">{m.debugId}</code> : <span class="muted">–</span>}</td>
                    <td class="num">{sizeOf(m.size)}</td>
                  </tr>
                ))}
              </Table>
            </>
          )
        }
      </Loaded>
    </section>
  );
}

/** The deploy's release health over the last 24 hours (issue 40): crash-free sessions and users, and per hour. */
function DeployHealth({ slug, deployId }: { slug: string; deployId: string }) {
  const r = useResource(() => call('getDeployHealth', { params: { slug, deployId }, query: { interval: 'hour' } }), [slug, deployId]);
  return (
    <section aria-labelledby="health-h">
      <h2 id="health-h">Release health, last 24 hours</h2>
      <Loaded r={r} what="release health">
        {(h) =>
          h.totals.sessions === 0 ? (
            <p class="empty">No sessions counted for this deploy yet. Sentry SDKs send them by default; see the README's release health.</p>
          ) : (
            <>
              <HealthFacts t={h.totals} />
              <CrashFreeChart series={h.series} interval="hour" label={`Crash-free sessions of ${deployId} per hour`} />
            </>
          )
        }
      </Loaded>
    </section>
  );
}
