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

/**
 * Suspect commits (the getIssueSuspectCommits route): the commits of the issue's first-seen deploy that touched the file
 * of its first in-app frame, each with the paths that matched.
 */
export function SuspectCommits({ slug, groupId }: { slug: string; groupId: string }) {
  const r = useResource(() => call('getIssueSuspectCommits', { params: { slug, groupId }, query: {} }), [slug, groupId]);
  return (
    <section aria-labelledby="suspect-commits-h">
      <h2 id="suspect-commits-h">Suspect commits</h2>
      <Loaded r={r} what="the suspect commits">
        {({ deployId, file, commits }) =>
          !deployId ? (
            <p class="empty">No deploy is named for this issue's first event, so no commits can be suspected.</p>
          ) : !file ? (
            <p class="empty">The issue has no in-app frame to match commits against.</p>
          ) : commits.length === 0 ? (
            <p class="empty">
              No commit of deploy <a href={projectPath(slug, `/deploys/${deployId}`)}>{deployId}</a> touched <code>{file}</code>.
            </p>
          ) : (
            <>
              <p class="muted">
                {countOf(commits.length, 'commit')} of the deploy that introduced it touched <code>{file}</code>.
              </p>
              <CommitTable caption="Commits that touched the file of the first in-app frame" commits={commits} />
            </>
          )
        }
      </Loaded>
    </section>
  );
}

/** The commits a deploy brought (the listDeployCommits route), newest first. */
export function DeployCommits({ slug, deployId }: { slug: string; deployId: string }) {
  const r = useResource(() => call('listDeployCommits', { params: { slug, deployId } }), [slug, deployId]);
  return (
    <section aria-labelledby="deploy-commits-h">
      <h2 id="deploy-commits-h">Commits</h2>
      <Loaded r={r} what="the deploy's commits">
        {({ commits }) =>
          commits.length === 0 ? (
            <p class="empty">No commits were recorded for this deploy (it was not built from a git checkout).</p>
          ) : (
            <CommitTable caption="Commits since the previous production deploy" commits={commits} />
          )
        }
      </Loaded>
    </section>
  );
}

interface CommitRow {
  sha: string;
  author: string;
  committedAt: string;
  subject: string;
  files: string[];
  filesCut: boolean;
  matched?: string[];
}

function CommitTable({ caption, commits }: { caption: string; commits: CommitRow[] }) {
  return (
    <Table caption={caption} class="commits" columns={['Commit', 'Subject', 'Author', 'When', 'Files']}>
      {commits.map((c) => (
        <tr key={c.sha}>
          <td>
            <code title={c.sha}>{c.sha.slice(0, 7)}</code>
          </td>
          <td>{c.subject}</td>
          <td>{c.author}</td>
          <td>
            <Time iso={c.committedAt} />
          </td>
          <td>
            {c.matched?.length ? (
              c.matched.map((f) => (
                <code key={f} class="matched">
                  {f}
                </code>
              ))
            ) : (
              <span class="muted">
                {countOf(c.files.length, 'file')}
                {c.filesCut ? ' or more' : ''}
              </span>
            )}
          </td>
        </tr>
      ))}
    </Table>
  );
}
