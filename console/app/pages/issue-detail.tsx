import { useEffect, useRef, useState } from 'preact/hooks';
import { useRoute } from 'preact-iso';
import { call, projectPath } from '../api.ts';
import { contextRows, shortId, type FrameMode, functionName, lineCol, openFrameIndex, positionOf, resolutionNote, resolvedSummary } from '../frames.ts';
import { parseStack, runs, type Frame } from '../stack.ts';
import { Badge, ErrorNote, Loaded, PageHead, Table, Time, useAction, useResource } from '../ui.tsx';
import { ACTION_LABEL, ACTION_ROUTE, ACTIONS_FOR } from './issues.tsx';
import { IssueFeedback } from './issue-feedback.tsx';
import { IssueDeploys, SuspectCommits } from './issue-deploys.tsx';
import { EventContextView, IssueTags } from './issue-context.tsx';
import { IgnoreControl, IgnoreStatus } from './issue-ignore.tsx';
import type { IgnoreIssueBody, SymbolicatedFrame } from '../../../schemas/api/errors.ts';

/**
 * One issue (the getIssue route): the stack with the app's own frames set apart from library
 * frames (symbolicated by source maps when the newest event's were, with their source and a minified toggle), the suggestion (a hint), counts, first and last seen, the recent samples, and the §3.1 actions
 * (buttons and the r / i / u keys).
 */
export function IssueDetail() {
  const { params } = useRoute();
  const slug = params.slug!;
  const groupId = params.groupId!;
  const r = useResource(() => call('getIssue', { params: { slug, groupId } }), [slug, groupId]);
  const act = useAction();
  const issue = r.data?.issue;
  const apply = (action: 'resolve' | 'ignore' | 'reopen') => {
    if (!issue || !ACTIONS_FOR[issue.status].includes(action)) return;
    void act.run(async () => {
      const res = await call(ACTION_ROUTE[action], { params: { slug, groupId } });
      r.setData(res);
    });
  };
  // Ignore until (issue 41): forever (no body) or until a condition.
  const ignoreWith = (body: IgnoreIssueBody) =>
    void act.run(async () => {
      r.setData(await call('ignoreIssue', { params: { slug, groupId }, body }));
    });
  // Resolve in next deploy (issue 41): open until a newer production deploy is live.
  const resolveInNextDeploy = () =>
    void act.run(async () => {
      r.setData(await call('resolveIssue', { params: { slug, groupId }, body: { inNextDeploy: true } }));
    });
  // r / i / u act on this render's issue (the handler is replaced each render, listened to once).
  const onKeyRef = useRef<(e: KeyboardEvent) => void>(() => undefined);
  onKeyRef.current = (e: KeyboardEvent) => {
    if (e.metaKey || e.ctrlKey || e.altKey || /^(INPUT|TEXTAREA|SELECT)$/.test((e.target as HTMLElement).tagName)) return;
    const action = ({ r: 'resolve', i: 'ignore', u: 'reopen' } as const)[e.key as 'r' | 'i' | 'u'];
    if (action) {
      e.preventDefault();
      apply(action);
    }
  };
  useEffect(() => {
    const listener = (e: KeyboardEvent) => onKeyRef.current(e);
    addEventListener('keydown', listener);
    return () => removeEventListener('keydown', listener);
  }, []);

  return (
    <div>
      <p>
        <a href={projectPath(slug, '/errors')}>← Issues</a>
      </p>
      <Loaded r={r} what="the issue">
        {({ issue: i }) => (
          <>
            <PageHead title={`${i.name}: ${i.message}`}>
              {ACTIONS_FOR[i.status].map((a) =>
                a === 'ignore' ? (
                  <IgnoreControl key={a} busy={act.busy} onIgnore={ignoreWith} />
                ) : (
                  <button key={a} type="button" disabled={act.busy} onClick={() => apply(a)} aria-keyshortcuts={{ resolve: 'r', ignore: 'i', reopen: 'u' }[a]}>
                    {ACTION_LABEL[a]}
                  </button>
                ),
              )}
              {i.status === 'unresolved' && (
                <button type="button" disabled={act.busy} onClick={resolveInNextDeploy}>
                  Resolve in next deploy
                </button>
              )}
            </PageHead>
            <ErrorNote error={act.error} />
            <div class="issue-facts">
              <Badge kind={`status ${i.status}`}>{i.status}</Badge>
              {i.regressionCount > 0 && <Badge kind="regressed">Regressed {i.regressionCount === 1 ? 'once' : `${i.regressionCount} times`}</Badge>}
              <dl class="facts">
                <div>
                  <dt>Events</dt>
                  <dd>{i.count.toLocaleString()}</dd>
                </div>
                {Object.entries(i.envCounts).map(([env, c]) => (
                  <div key={env}>
                    <dt>in {env}</dt>
                    <dd>{c.toLocaleString()}</dd>
                  </div>
                ))}
                <div>
                  <dt>First seen</dt>
                  <dd>
                    <Time iso={i.firstSeen} />
                  </dd>
                </div>
                <div>
                  <dt>Last seen</dt>
                  <dd>
                    <Time iso={i.lastSeen} />
                  </dd>
                </div>
              </dl>
            </div>
            <IgnoreStatus issue={i} />
            {i.redirectedFrom && (
              <p class="note" role="status">
                Issue <code>{i.redirectedFrom}</code> was merged into this one.
              </p>
            )}
            {i.mergedFrom && i.mergedFrom.length > 0 && (
              <section aria-labelledby="merged-h">
                <h2 id="merged-h">Merged from</h2>
                <p class="muted">Later events of these issues land here; their earlier events count in this issue.</p>
                <ul class="merged-from">
                  {i.mergedFrom.map((m) => (
                    <li key={m.groupId}>
                      <code title={`fingerprint ${m.fingerprint}`}>{m.groupId}</code>, merged <Time iso={m.mergedAt} />
                    </li>
                  ))}
                </ul>
              </section>
            )}
            <IssueDeploys slug={slug} issue={i} />
            <SuspectCommits slug={slug} groupId={i.groupId} />
            {i.suggestion && (
              <aside class="note hint" aria-label="Suggestion">
                <strong>Hint</strong> (generated from the message and stack; not a diagnosis): {i.suggestion.replace(/^Hint, not a diagnosis:\s*/, '')}
              </aside>
            )}
            <section aria-labelledby="stack-h">
              <h2 id="stack-h">Stack</h2>
              {i.frames?.length ? (
                <SymbolicatedStackView slug={slug} stack={i.stack} minifiedStack={i.minifiedStack} frames={i.frames} />
              ) : (
                <StackView stack={i.stack} />
              )}
            </section>
            <EventContextView sample={i.samples[0]} />
            <IssueTags slug={slug} groupId={groupId} />
            <section aria-labelledby="samples-h">
              <h2 id="samples-h">Recent events ({i.samples.length})</h2>
              <Samples samples={i.samples} message={i.message} />
            </section>
            <IssueFeedback slug={slug} issueId={groupId} />
          </>
        )}
      </Loaded>
    </div>
  );
}

function FrameLine({ f }: { f: Frame }) {
  if (!f.file) return <li class="frame">{f.raw.trim()}</li>;
  return (
    <li class={`frame ${f.inApp ? 'in-app' : 'library'}`}>
      <span class="fn">{f.fn ?? '<anonymous>'}</span> <span class="file">{f.file}</span>
      {f.line !== null && (
        <span class="pos">
          :{f.line}
          {f.column !== null ? `:${f.column}` : ''}
        </span>
      )}
      {f.inApp && <span class="sr-only"> (your code)</span>}
    </li>
  );
}

export function StackView({ stack }: { stack: string }) {
  if (!stack.trim()) return <p class="muted">No stack was sent with this error.</p>;
  const parsed = parseStack(stack);
  const appFrames = parsed.frames.filter((f) => f.inApp).length;
  return (
    <div class="stack-view">
      {parsed.header.length > 0 && <pre class="stack-head">{parsed.header.join('\n')}</pre>}
      <p class="muted legend">
        <span class="swatch in-app" /> your code ({appFrames}) <span class="swatch library" /> libraries and runtime ({parsed.frames.length - appFrames},
        folded)
      </p>
      {runs(parsed.frames).map((run, n) =>
        run.inApp ? (
          <ol class="frames" key={n}>
            {run.frames.map((f, k) => (
              <FrameLine f={f} key={k} />
            ))}
          </ol>
        ) : (
          <details key={n} class="library-run">
            <summary>
              {run.frames.length} library {run.frames.length === 1 ? 'frame' : 'frames'}
            </summary>
            <ol class="frames">
              {run.frames.map((f, k) => (
                <FrameLine f={f} key={k} />
              ))}
            </ol>
          </details>
        ),
      )}
    </div>
  );
}

/**
 * A stack whose frames went through source maps (issue 37): each frame's original function and file:line:col, the
 * source around the top in-app frame (others open on a click), library runs folded, and per frame which deploy's map
 * resolved it or why none did. "Minified" shows every frame as the client sent it.
 */
function SymbolicatedStackView({
  slug,
  stack,
  minifiedStack,
  frames,
}: {
  slug: string;
  stack: string;
  minifiedStack: string | null;
  frames: SymbolicatedFrame[];
}) {
  const [mode, setMode] = useState<FrameMode>('original');
  const header = parseStack(mode === 'minified' && minifiedStack ? minifiedStack : stack).header;
  const appFrames = frames.filter((f) => f.inApp).length;
  const open = openFrameIndex(frames);
  const summary = resolvedSummary(frames);
  const indexed = frames.map((f, index) => ({ f, index, inApp: f.inApp }));
  const list = (items: typeof indexed) => (
    <ol class="frames">
      {items.map(({ f, index }) => (
        <SymbolicatedFrameLine key={index} f={f} mode={mode} slug={slug} open={index === open} />
      ))}
    </ol>
  );
  return (
    <div class="stack-view symbolicated">
      <div class="stack-bar">
        {header.length > 0 ? <pre class="stack-head">{header.join('\n')}</pre> : <span />}
        <div class="toggle" role="group" aria-label="Show frames as">
          {(['original', 'minified'] as const).map((m) => (
            <button key={m} type="button" class="small secondary" aria-pressed={mode === m} onClick={() => setMode(m)}>
              {m === 'original' ? 'Original' : 'Minified'}
            </button>
          ))}
        </div>
      </div>
      <p class="muted legend">
        <span class="swatch in-app" /> your code ({appFrames}) <span class="swatch library" /> libraries and runtime ({frames.length - appFrames}, folded)
        {summary && <span class="resolved-summary"> · {summary}</span>}
      </p>
      {runs(indexed).map((run, n) =>
        run.inApp ? (
          <div key={n}>{list(run.frames)}</div>
        ) : (
          <details key={n} class="library-run">
            <summary>
              {run.frames.length} library {run.frames.length === 1 ? 'frame' : 'frames'}
            </summary>
            {list(run.frames)}
          </details>
        ),
      )}
    </div>
  );
}

function SymbolicatedFrameLine({ f, mode, slug, open }: { f: SymbolicatedFrame; mode: FrameMode; slug: string; open: boolean }) {
  const p = positionOf(f, mode);
  const note = resolutionNote(f);
  const head = (
    <span class="frame-head">
      <span class="frame-where">
        <span class="fn">{functionName(p)}</span> <span class="file">{p.file}</span>
        <span class="pos">{lineCol(p)}</span>
        {f.inApp && <span class="sr-only"> (your code)</span>}
      </span>
      {note.resolved ? (
        <span class="frame-note" title={`Resolved by ${note.mapName}, ${note.how}`}>
          <span class="sr-only">resolved by </span>
          map <code>{note.mapName}</code>
          {note.deployId ? (
            <>
              {' · deploy '}
              <a href={projectPath(slug, `/deploys/${encodeURIComponent(note.deployId)}`)} title={note.deployId} aria-label={`deploy ${note.deployId}`}>
                {shortId(note.deployId)}
              </a>
            </>
          ) : (
            ' · uploaded'
          )}
        </span>
      ) : (
        <span class="frame-note unresolved">
          <span class="muted">minified:</span> {note.why}
        </span>
      )}
    </span>
  );
  const context = mode === 'original' && f.context && f.context.lines.length > 0 ? f.context : null;
  return (
    <li class={`frame ${f.inApp ? 'in-app' : 'library'}${note.resolved ? '' : ' unresolved'}`}>
      {context ? (
        <details class="frame-source" open={open}>
          <summary>{head}</summary>
          <ContextLines c={context} />
        </details>
      ) : (
        head
      )}
    </li>
  );
}

function ContextLines({ c }: { c: NonNullable<SymbolicatedFrame['context']> }) {
  const rows = contextRows(c);
  return (
    <div class="context-lines" role="group" aria-label={`Source, lines ${rows[0]?.number ?? ''} to ${rows[rows.length - 1]?.number ?? ''}`}>
      {rows.map((r) => (
        <div key={r.number} class={r.failing ? 'ctx failing' : 'ctx'} aria-current={r.failing ? 'true' : undefined}>
          <span class="ln">{r.number}</span>
          <span class="code">{r.text}</span>
          {r.failing && <span class="sr-only"> (the line that failed)</span>}
        </div>
      ))}
    </div>
  );
}

const KNOWN = new Set([
  'frames',
  'minifiedStack',
  'name',
  'stack',
  'message',
  'receivedAt',
  'environment',
  'path',
  'runtime',
  'userId',
  'gitSha',
  'deployId',
  'eventId',
  'originHost',
  'extra',
  'clientTime',
  'truncated',
  'context',
]);
const SAMPLES_SHOWN = 5;

/** The recent samples, newest first: one row each (where, when, who, which build), extra folded. */
function Samples({ samples, message }: { samples: Array<Record<string, unknown>>; message: string }) {
  const [all, setAll] = useState(false);
  const shown = all ? samples : samples.slice(0, SAMPLES_SHOWN);
  const str = (v: unknown) => (typeof v === 'string' && v ? v : null);
  return (
    <>
      <Table caption="Recent events, newest first" class="samples" columns={['When', 'Environment', 'Runtime', 'Path', 'Context', 'Extra']}>
        {shown.map((s, n) => {
          const extra = s.extra as Record<string, unknown> | undefined;
          const other = Object.entries(s).filter(([k, v]) => !KNOWN.has(k) && v !== null && v !== undefined && v !== '');
          const context: Array<[string, string]> = [
            ...(str(s.originHost) ? [['host', str(s.originHost)!] as [string, string]] : []),
            ...(str(s.userId) ? [['user', str(s.userId)!] as [string, string]] : []),
            ...(str(s.gitSha) ? [['commit', str(s.gitSha)!.slice(0, 12)] as [string, string]] : []),
            ...(str(s.deployId) ? [['deploy', str(s.deployId)!] as [string, string]] : []),
            ...other.map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)] as [string, string]),
          ];
          return (
            <tr key={String(s.eventId ?? n)}>
              <td>
                <Time iso={str(s.receivedAt)} />
              </td>
              <td>{str(s.environment) && <Badge kind={`env ${s.environment}`}>{String(s.environment)}</Badge>}</td>
              <td>{str(s.runtime) ?? ''}</td>
              <td>{str(s.path) ? <code>{String(s.path)}</code> : ''}</td>
              <td class="context">
                {context.map(([k, v]) => (
                  <span key={k}>
                    <span class="muted">{k}</span>
                    {'\u00a0'}
                    {v}{' '}
                  </span>
                ))}
                {str(s.message) && s.message !== message && <div class="muted">{String(s.message)}</div>}
              </td>
              <td>
                {extra && Object.keys(extra).length > 0 ? (
                  <details>
                    <summary>
                      {Object.keys(extra).length} {Object.keys(extra).length === 1 ? 'field' : 'fields'}
                    </summary>
                    <pre>{JSON.stringify(extra, null, 2)}</pre>
                  </details>
                ) : (
                  <span class="muted">none</span>
                )}
              </td>
            </tr>
          );
        })}
      </Table>
      {samples.length > SAMPLES_SHOWN && (
        <button type="button" class="secondary small" onClick={() => setAll(!all)} aria-expanded={all}>
          {all ? `Show the newest ${SAMPLES_SHOWN}` : `Show all ${samples.length}`}
        </button>
      )}
    </>
  );
}
