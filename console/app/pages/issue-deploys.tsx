import { call, projectPath } from '../api.ts';
import { Badge, Loaded, Table, Time, useResource } from '../ui.tsx';
import { countOf } from '../text.ts';
import type { Issue, IssueDeployRef, IssueSummary } from '../../../schemas/api/errors.ts';

/**
 * Issues and deploys (issue 41): an issue's deploys (first seen, last seen, regressed in, and resolve in next deploy's
 * mark), each a link to its deploy page; and a deploy's issues, the ones it introduced and the ones it regressed.
 */
export function IssueDeploys({ slug, issue: i }: { slug: string; issue: Issue }) {
  const rows: Array<[string, IssueDeployRef | null | undefined]> = [
    ['First seen in', i.firstSeenDeploy],
    ['Last seen in', i.lastSeenDeploy],
    ['Regressed in', i.regressedDeploy],
  ];
  const next = i.resolveInNextDeploy;
  return (
    <section aria-labelledby="issue-deploys-h">
      <h2 id="issue-deploys-h">Deploys</h2>
      {next && (
        <p class="note" role="status">
          {next.resolvedBy ? (
            <>
              Resolved by <DeployLink slug={slug} d={next.resolvedBy} />, the next production deploy after <DeployLink slug={slug} d={next.markedAt} />.
            </>
          ) : (
            <>
              Resolves when a production deploy newer than <DeployLink slug={slug} d={next.markedAt} /> goes live; events of that deploy or older ones do not
              reopen it.
            </>
          )}
        </p>
      )}
      <dl class="facts issue-deploys">
        {rows.map(([label, d]) => (
          <div key={label}>
            <dt>{label}</dt>
            <dd>{d ? <DeployLink slug={slug} d={d} /> : <span class="muted">no deploy named</span>}</dd>
          </div>
        ))}
      </dl>
    </section>
  );
}

function DeployLink({ slug, d }: { slug: string; d: IssueDeployRef }) {
  return (
    <a href={projectPath(slug, `/deploys/${d.id}`)} title={`created ${new Date(d.createdAt).toLocaleString()}`}>
      <code>{d.gitSha ? d.gitSha.slice(0, 7) : d.id}</code>
    </a>
  );
}

/** A deploy's issues (the listDeployIssues route): introduced in it and regressed in it. */
export function DeployIssues({ slug, deployId }: { slug: string; deployId: string }) {
  const r = useResource(() => call('listDeployIssues', { params: { slug, deployId } }), [slug, deployId]);
  return (
    <section aria-labelledby="deploy-issues-h">
      <h2 id="deploy-issues-h">Issues</h2>
      <Loaded r={r} what="the deploy's issues">
        {({ introduced, regressed }) =>
          introduced.length + regressed.length === 0 ? (
            <p class="empty">No issue was first seen or regressed in this deploy.</p>
          ) : (
            <>
              <p class="muted">
                {countOf(introduced.length, 'issue')} introduced, {countOf(regressed.length, 'issue')} regressed.
              </p>
              <Table caption="Issues introduced or regressed in this deploy" class="deploy-issues" columns={['Issue', 'In this deploy', 'Events', 'Last seen']}>
                {[...introduced.map((x) => ['introduced', x] as const), ...regressed.map((x) => ['regressed', x] as const)].map(
                  ([how, x]: readonly [string, IssueSummary]) => (
                    <tr key={`${how}-${x.groupId}`}>
                      <td>
                        <a href={projectPath(slug, `/errors/${x.groupId}`)}>
                          {x.name}: {x.message}
                        </a>
                      </td>
                      <td>
                        <Badge kind={how === 'regressed' ? 'regressed' : 'new'}>{how}</Badge>
                      </td>
                      <td class="num">{x.count.toLocaleString()}</td>
                      <td>
                        <Time iso={x.lastSeen} />
                      </td>
                    </tr>
                  ),
                )}
              </Table>
            </>
          )
        }
      </Loaded>
    </section>
  );
}
