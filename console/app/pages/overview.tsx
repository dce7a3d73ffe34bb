import { useRoute } from 'preact-iso';
import { call, projectPath } from '../api.ts';
import { Badge, Loaded, PageHead, Time, useResource, countOf } from '../ui.tsx';
import { DeployStatus } from './deploys.tsx';
import { CrashFree, CrashFreeChart } from './release-health.tsx';

export function Overview() {
  const { params } = useRoute();
  const slug = params.slug!;
  const r = useResource(() => call('getProject', { params: { slug } }), [slug]);
  const recent = useResource(() => call('listIssues', { params: { slug }, query: { sort: 'lastSeen', limit: 5 } }), [slug]);
  const liveId = r.data?.project.deploys.live?.id;
  // The live deploy's crash-free sessions over the last 24 hours (issue 40).
  const health = useResource(
    () => (liveId ? call('getDeployHealth', { params: { slug, deployId: liveId }, query: { interval: 'hour' } }) : Promise.resolve(null)),
    [slug, liveId],
  );
  return (
    <Loaded r={r} what="the project">
      {({ project: p }) => (
        <div>
          <PageHead title={p.name} />
          <p class="muted">
            <code>{p.slug}</code> · default branch <code>{p.defaultBranch}</code> · created <Time iso={p.createdAt} />
            {p.links.site && (
              <>
                {' · '}
                <a href={p.links.site} target="_blank" rel="noopener" class="site-link">
                  {p.links.site.replace(/^https?:\/\//, '').replace(/\/$/, '')} ↗
                </a>
              </>
            )}
          </p>
          <div class="tiles">
            <a class="tile" href={projectPath(slug, '/errors')}>
              <span class="big">{p.errors.open.toLocaleString()}</span>
              <span>open issues</span>
              <span class="muted">
                {Object.entries(p.errors.openByEnvironment)
                  .map(([env, n]) => `${env} ${n}`)
                  .join(' · ') || 'none'}
              </span>
            </a>
            <a class="tile" href={projectPath(slug, '/deploys')}>
              <span class="big">{p.deploys.live ? <DeployStatus d={p.deploys.live} /> : '–'}</span>
              <span>production</span>
              <span class="muted">
                {p.deploys.live ? (
                  <>
                    {p.deploys.live.branch} · <Time iso={p.deploys.live.finishedAt ?? p.deploys.live.createdAt} />
                  </>
                ) : (
                  'not deployed yet'
                )}
              </span>
            </a>
            <a class="tile" href={liveId ? projectPath(slug, `/deploys/${liveId}`) : projectPath(slug, '/deploys')}>
              <span class="big">
                <CrashFree t={health.data?.totals} of="sessions" />
              </span>
              <span>crash-free sessions</span>
              <span class="muted">
                {health.data ? (
                  <>
                    live deploy, 24 h · {health.data.totals.sessions.toLocaleString()} sessions · users <CrashFree t={health.data.totals} of="users" />
                  </>
                ) : (
                  'no live deploy'
                )}
              </span>
            </a>
            <a class="tile" href={projectPath(slug, '/keys')}>
              <span class="big">{p.keys.live + p.keys.test + p.keys.ingest}</span>
              <span>active keys</span>
              <span class="muted">
                {p.keys.ingest} ingest · {p.keys.live} live · {p.keys.test} test
              </span>
            </a>
          </div>
          {health.data && health.data.totals.sessions > 0 && (
            <section aria-labelledby="live-health-h">
              <h2 id="live-health-h">Live deploy health</h2>
              <CrashFreeChart series={health.data.series} interval="hour" label="Crash-free sessions of the live deploy per hour" />
            </section>
          )}
          <section aria-labelledby="recent-h">
            <h2 id="recent-h">Recently seen issues</h2>
            <Loaded r={recent} what="issues">
              {(d) =>
                d.data.length === 0 ? (
                  <p class="empty">No open issues.</p>
                ) : (
                  <ul class="plain">
                    {d.data.map((i) => (
                      <li key={i.groupId}>
                        <a href={projectPath(slug, `/errors/${i.groupId}`)}>
                          <strong>{i.name}</strong> {i.message}
                        </a>{' '}
                        <span class="muted">
                          {countOf(i.count, 'event')} · <Time iso={i.lastSeen} />
                        </span>
                        {i.regressionCount > 0 && <Badge kind="regressed">Regressed</Badge>}
                      </li>
                    ))}
                  </ul>
                )
              }
            </Loaded>
          </section>
          {p.deploys.previews.length > 0 && (
            <section aria-labelledby="previews-h">
              <h2 id="previews-h">Recent previews</h2>
              <ul class="plain">
                {p.deploys.previews.map((d) => (
                  <li key={d.id}>
                    <a href={projectPath(slug, `/deploys/${d.id}`)}>{d.branch}</a> <DeployStatus d={d} /> <Time iso={d.createdAt} />
                  </li>
                ))}
              </ul>
            </section>
          )}
          <section aria-labelledby="envhosts-h">
            <h2 id="envhosts-h">Environment hosts</h2>
            <p class="muted">
              Events from pages on these hosts are stamped production or preview; these hosts serve nothing (custom domains are in{' '}
              <a href={projectPath(slug, '/settings')}>Settings</a>).
            </p>
            <p>
              Production:{' '}
              {p.environmentHosts.production.length ? p.environmentHosts.production.map((d) => <code key={d}>{d} </code>) : <span class="muted">none</span>}
              <br />
              Preview: {p.environmentHosts.preview.length ? p.environmentHosts.preview.map((d) => <code key={d}>{d} </code>) : <span class="muted">none</span>}
            </p>
          </section>
        </div>
      )}
    </Loaded>
  );
}
