import { useEffect, useRef, useState } from 'preact/hooks';
import { useLocation, useRoute } from 'preact-iso';
import { call, projectPath, query, type IssueStatus } from '../api.ts';
import { Badge, ErrorNote, Loading, PageHead, Time, useAction, useResource } from '../ui.tsx';
import type { Environment } from '../../../schemas/error-event.ts';

/**
 * The issue inbox (the listIssues route): status tabs, environment filter, search, sort, cursor pages; select several
 * and resolve / ignore / reopen (bulkIssues) or merge them (mergeIssues: into the one with the most events, as Sentry
 * picks its primary); keys for moving and acting.
 * Filters live in the URL (shareable, back button); the page's cursor stack lives here.
 */
const TABS: IssueStatus[] = ['unresolved', 'resolving', 'resolved', 'ignored'];
export const ENVIRONMENTS: Environment[] = ['production', 'preview', 'unknown'];
const PAGE_SIZE = 25;

/** What each action does from each tab: the transitions of spec §3.1. */
export const ACTIONS_FOR: Record<IssueStatus, Array<'resolve' | 'ignore' | 'reopen'>> = {
  unresolved: ['resolve', 'ignore'],
  resolved: ['reopen'],
  ignored: ['reopen'],
  resolving: ['reopen'],
};
export const ACTION_LABEL = { resolve: 'Resolve', ignore: 'Ignore', reopen: 'Reopen' } as const;
/** The route each action calls for one issue. */
export const ACTION_ROUTE = { resolve: 'resolveIssue', ignore: 'ignoreIssue', reopen: 'reopenIssue' } as const;
const ACTION_KEY = { resolve: 'r', ignore: 'i', reopen: 'u' } as const;

export function Issues() {
  const { params } = useRoute();
  const slug = params.slug!;
  const { query: q, route, path } = useLocation();
  const status = (TABS.includes(q.status as IssueStatus) ? q.status : 'unresolved') as IssueStatus;
  const environment = ENVIRONMENTS.find((e) => e === q.environment) ?? '';
  const sort = q.sort === 'lastSeen' ? 'lastSeen' : 'count';
  const search = q.query ?? '';
  const filterKey = `${slug}|${status}|${environment}|${sort}|${search}`;
  // The cursors of the pages walked so far belong to the filters they were walked with: new filters start at page
  // one in the same render (an effect would first send the old cursor with the new sort, which the API refuses).
  const [paging, setPaging] = useState<{ filterKey: string; cursors: Array<string | null> }>({ filterKey, cursors: [null] });
  const cursors = paging.filterKey === filterKey ? paging.cursors : [null];
  const setCursors = (next: Array<string | null>) => setPaging({ filterKey, cursors: next });
  const cursor = cursors[cursors.length - 1] ?? null;

  const r = useResource(
    () =>
      call('listIssues', {
        params: { slug },
        query: { status, environment: environment || undefined, sort, query: search, limit: PAGE_SIZE, cursor: cursor ?? undefined },
      }),
    [filterKey, cursor],
  );
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [focus, setFocus] = useState(0);
  const [outcome, setOutcome] = useState<string | null>(null);
  const [help, setHelp] = useState(false);
  const act = useAction();
  const searchRef = useRef<HTMLInputElement>(null);
  const onKeyRef = useRef<(e: KeyboardEvent) => void>(() => undefined);
  const rows = r.data?.data ?? [];
  // biome-ignore lint/correctness/useExhaustiveDependencies: a new filter or page clears the selection
  useEffect(() => {
    setSelected(new Set());
    setFocus(0);
  }, [filterKey, cursor]);
  useEffect(() => {
    if (r.data && !r.loading) performance.mark('issues-rendered');
  }, [r.data, r.loading]);

  const setFilter = (change: Record<string, string>) => {
    const next = { status, environment, sort, query: search, ...change };
    route(
      `${path}${query({ status: next.status === 'unresolved' ? '' : next.status, environment: next.environment, sort: next.sort === 'count' ? '' : next.sort, query: next.query })}`,
    );
  };

  const apply = (action: 'resolve' | 'ignore' | 'reopen', ids: string[]) => {
    if (!ids.length || !ACTIONS_FOR[status].includes(action)) return;
    void act.run(async () => {
      const res = await call('bulkIssues', { params: { slug }, body: { action, groupIds: ids } });
      const done = { resolve: 'resolved', ignore: 'ignored', reopen: 'reopened' }[action];
      const skipped = res.skipped.length ? ` ${res.skipped.length} skipped: ${[...new Set(res.skipped.map((s) => s.message))].join('; ')}.` : '';
      setOutcome(`${res.updated.length} ${res.updated.length === 1 ? 'issue' : 'issues'} ${done}.${skipped}`);
      setSelected(new Set());
      await r.reload();
    });
  };
  const targets = () => (selected.size ? [...selected] : rows[focus] ? [rows[focus]!.groupId] : []);
  // Merge (issue 41): the selected issue with the most events keeps its id and takes the others.
  const merge = () => {
    const chosen = rows.filter((i) => selected.has(i.groupId)).sort((a, b) => b.count - a.count || a.groupId.localeCompare(b.groupId));
    const [target, ...others] = chosen;
    if (!target || !others.length) return;
    void act.run(async () => {
      const res = await call('mergeIssues', { params: { slug, groupId: target.groupId }, body: { groupIds: others.map((i) => i.groupId) } });
      setOutcome(`${others.length} ${others.length === 1 ? 'issue' : 'issues'} merged into ${res.issue.name}: ${res.issue.message}.`);
      setSelected(new Set());
      await r.reload();
    });
  };

  const toggle = (id: string) => {
    const next = new Set(selected);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setSelected(next);
  };

  // Keyboard: j/k move, x selects, o or Enter opens, r/i/u act, / searches, ? shows the keys.
  // The handler is replaced on every render (it sees this render's rows and focus) and listened to once: an effect
  // re-subscribing after each render would leave the previous render's handler in place until the effect runs.
  onKeyRef.current = (e: KeyboardEvent) => {
    const t = e.target as HTMLElement;
    if (e.metaKey || e.ctrlKey || e.altKey || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName)) return;
    const row = rows[focus];
    switch (e.key) {
      case 'j':
        setFocus((f) => Math.min(rows.length - 1, f + 1));
        break;
      case 'k':
        setFocus((f) => Math.max(0, f - 1));
        break;
      case 'x':
        if (row) toggle(row.groupId);
        break;
      case 'o':
      case 'Enter':
        if (row && t.tagName !== 'A' && t.tagName !== 'BUTTON') route(projectPath(slug, `/errors/${row.groupId}`));
        else return;
        break;
      case 'r':
        apply('resolve', targets());
        break;
      case 'i':
        apply('ignore', targets());
        break;
      case 'u':
        apply('reopen', targets());
        break;
      case '/':
        searchRef.current?.focus();
        break;
      case '?':
        setHelp((h) => !h);
        break;
      default:
        return;
    }
    e.preventDefault();
  };
  useEffect(() => {
    const listener = (e: KeyboardEvent) => onKeyRef.current(e);
    addEventListener('keydown', listener);
    return () => removeEventListener('keydown', listener);
  }, []);
  useEffect(() => {
    const el = document.querySelector<HTMLElement>(`[data-row="${focus}"]`);
    if (el && document.activeElement?.closest('.issue-list')) el.focus();
    else el?.scrollIntoView({ block: 'nearest' });
  }, [focus]);

  const allSelected = rows.length > 0 && rows.every((i) => selected.has(i.groupId));
  return (
    <div>
      <PageHead title="Issues">
        <button type="button" class="secondary small" onClick={() => setHelp(!help)} aria-expanded={help}>
          Keyboard shortcuts
        </button>
      </PageHead>
      {help && (
        <div class="note" role="region" aria-label="Keyboard shortcuts">
          <p>
            <kbd>j</kbd>/<kbd>k</kbd> move · <kbd>x</kbd> select · <kbd>o</kbd> or <kbd>Enter</kbd> open · <kbd>r</kbd> resolve · <kbd>i</kbd> ignore ·{' '}
            <kbd>u</kbd> reopen · <kbd>/</kbd> search · <kbd>?</kbd> this help. Actions apply to the selected issues, or to the highlighted one.
          </p>
        </div>
      )}
      <nav class="tabs" aria-label="Issue status">
        {TABS.map((t) => (
          <a
            key={t}
            href={`${path}${query({ status: t === 'unresolved' ? '' : t, environment, sort: sort === 'count' ? '' : sort, query: search })}`}
            aria-current={t === status ? 'page' : undefined}
          >
            {t[0]!.toUpperCase() + t.slice(1)}
          </a>
        ))}
      </nav>
      <div class="filters">
        <form
          role="search"
          onSubmit={(e) => {
            e.preventDefault();
            setFilter({ query: searchRef.current?.value.trim() ?? '' });
          }}
        >
          <label>
            Search
            <input
              ref={searchRef}
              type="search"
              name="query"
              maxLength={200}
              placeholder="text, or tag:value (browser:Chrome release:abc123)"
              defaultValue={search}
              key={search}
            />
          </label>
          <button type="submit" class="secondary">
            Search
          </button>
        </form>
        <label>
          Environment
          <select value={environment} onChange={(e) => setFilter({ environment: e.currentTarget.value })}>
            <option value="">All</option>
            {ENVIRONMENTS.map((env) => (
              <option key={env} value={env}>
                {env}
              </option>
            ))}
          </select>
        </label>
        <label>
          Sort by
          <select value={sort} onChange={(e) => setFilter({ sort: e.currentTarget.value })}>
            <option value="count">Events</option>
            <option value="lastSeen">Last seen</option>
          </select>
        </label>
      </div>

      <div class="bulk" role="toolbar" aria-label="Bulk actions">
        <label class="check">
          <input
            type="checkbox"
            checked={allSelected}
            onChange={() => setSelected(allSelected ? new Set() : new Set(rows.map((i) => i.groupId)))}
            aria-label="Select all issues on this page"
          />
          {selected.size ? `${selected.size} selected` : 'Select all'}
        </label>
        {ACTIONS_FOR[status].map((a) => (
          <button
            key={a}
            type="button"
            class="secondary"
            disabled={act.busy || selected.size === 0}
            onClick={() => apply(a, [...selected])}
            aria-keyshortcuts={ACTION_KEY[a]}
          >
            {ACTION_LABEL[a]}
          </button>
        ))}
        <button
          type="button"
          class="secondary"
          disabled={act.busy || selected.size < 2}
          onClick={merge}
          title="Merge the selected issues into the one with the most events: later events of any of them land there"
        >
          Merge
        </button>
        {outcome && (
          <span role="status" class="muted">
            {outcome}
          </span>
        )}
      </div>
      <ErrorNote error={act.error} />
      <ErrorNote error={r.error} />
      {r.data === undefined ? (
        !r.error && <Loading what="issues" />
      ) : rows.length === 0 ? (
        <p class="empty">
          {search || environment
            ? 'No issues match these filters.'
            : status === 'unresolved'
              ? 'No unresolved issues. Errors your apps report appear here.'
              : `No ${status} issues.`}
        </p>
      ) : (
        <ul class="issue-list" aria-busy={r.loading}>
          {rows.map((i, n) => (
            <li
              key={i.groupId}
              class={`issue-row${n === focus ? ' focused' : ''}${selected.has(i.groupId) ? ' selected' : ''}`}
              data-row={n}
              tabIndex={-1}
              onClick={() => setFocus(n)}
            >
              <input type="checkbox" checked={selected.has(i.groupId)} onChange={() => toggle(i.groupId)} aria-label={`Select ${i.name}: ${i.message}`} />
              <div class="issue-main">
                <a href={projectPath(slug, `/errors/${i.groupId}`)} class="issue-title">
                  <strong>{i.name}</strong> <span>{i.message}</span>
                </a>
                <div class="issue-meta">
                  {i.culprit && <code class="culprit">{i.culprit}</code>}
                  {i.regressionCount > 0 && <Badge kind="regressed">Regressed{i.regressionCount > 1 ? ` ×${i.regressionCount}` : ''}</Badge>}
                  {Object.entries(i.envCounts).map(([env, c]) => (
                    <Badge key={env} kind={`env ${env}`}>
                      {env} {c.toLocaleString()}
                    </Badge>
                  ))}
                </div>
              </div>
              <div class="issue-numbers">
                <span class="count" title="events">
                  {i.count.toLocaleString()}
                </span>
                <span class="muted">
                  last <Time iso={i.lastSeen} />
                </span>
                <span class="muted">
                  first <Time iso={i.firstSeen} />
                </span>
              </div>
            </li>
          ))}
        </ul>
      )}
      {(cursors.length > 1 || r.data?.hasMore) && (
        <nav class="pager" aria-label="Pages">
          <button type="button" class="secondary" disabled={cursors.length <= 1 || r.loading} onClick={() => setCursors(cursors.slice(0, -1))}>
            Previous page
          </button>
          <span class="muted">Page {cursors.length}</span>
          <button type="button" class="secondary" disabled={!r.data?.hasMore || r.loading} onClick={() => setCursors([...cursors, r.data!.nextCursor])}>
            Next page
          </button>
        </nav>
      )}
    </div>
  );
}
