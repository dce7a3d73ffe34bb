import { InvalidArgumentError, Option } from 'commander';
import type { IgnoreIssueBody, IssueAction } from '../../../schemas/api/errors.ts';
import type { Client } from '../client.ts';
import type { CommandDef, Family } from './command.ts';

/** `cx errors list | show | resolve | ignore | reopen | merge`: error issues triaged from the terminal. */

const _e = encodeURIComponent;
const listIssues = (client: Client, slug: string, query: Record<string, string>) => client.api.call('listIssues', { params: { slug }, query });
const getIssue = (client: Client, slug: string, id: string) => client.api.call('getIssue', { params: { slug, groupId: id } });
const actOnIssues = (client: Client, slug: string, body: { action: IssueAction; groupIds: string[]; inNextDeploy?: true }) =>
  client.api.call('bulkIssues', { params: { slug }, body });

/** A frame is the app's own unless it is a library's, Node's own, or a bundled vendor chunk (as the console folds them). */
const libraryFrame = (line: string) => /node_modules|\(node:|node:internal|<anonymous>|\bnative\b|vendor/.test(line);

/** Ignore until (issue 41): Sentry's conditions as options, one at most. */
const IGNORE_OPTIONS = ['for', 'events', 'users', 'until', 'untilEscalating'] as const;
const ignoreOptions = () => {
  const count = (v: string) => {
    if (!/^\d{1,7}$/.test(v) || Number(v) < 1 || Number(v) > 1_000_000) throw new InvalidArgumentError('a whole number from 1 to 1,000,000');
    return Number(v);
  };
  const o = [
    new Option('--for <duration>', 'ignore for a while: 30m, 1h, 24h, 7d').argParser((v) => {
      const m = /^(\d{1,6})([mhd])$/.exec(v);
      if (!m) throw new InvalidArgumentError('like 30m, 1h, 24h or 7d');
      return Number(m[1]) * { m: 1, h: 60, d: 1440 }[m[2] as 'm' | 'h' | 'd'];
    }),
    new Option('--events <n>', 'until n more events').argParser(count),
    new Option('--users <n>', 'until n more distinct users').argParser(count),
    new Option('--until <time>', 'until this ISO 8601 time'),
    new Option('--until-escalating', 'until it escalates (3x its usual hourly rate)'),
  ];
  return o.map((x) => x.conflicts(o.filter((y) => y !== x).map((y) => y.attributeName())));
};
type IgnoreOpts = Partial<{ for: number; events: number; users: number; until: string; untilEscalating: boolean }>;
function ignoreBodyOf(o: IgnoreOpts): IgnoreIssueBody {
  if (o.for !== undefined) return { ignoreDuration: o.for };
  if (o.events !== undefined) return { ignoreCount: o.events };
  if (o.users !== undefined) return { ignoreUserCount: o.users };
  if (o.until !== undefined) return { ignoreUntil: o.until };
  if (o.untilEscalating) return { ignoreUntilEscalating: true };
  return null;
}

const act = (action: IssueAction): CommandDef => ({
  name: `errors ${action}`,
  args: '<groupIds...>',
  project: true,
  // Resolve in next deploy (issue 41): resolved once a newer production deploy goes live.
  options:
    action === 'resolve'
      ? () => [new Option('--in-next-deploy', 'resolve once a production deploy newer than the live one goes live')]
      : action === 'ignore'
        ? ignoreOptions
        : undefined,
  async run({ client, out, project }, ids, opts) {
    // Ignore until a condition: each issue through its own route (the bulk route ignores forever).
    const until = action === 'ignore' && IGNORE_OPTIONS.some((k) => (opts as IgnoreOpts)[k] !== undefined) ? ignoreBodyOf(opts as IgnoreOpts) : null;
    if (until) {
      const updated = [];
      for (const groupId of ids) updated.push((await client.api.call('ignoreIssue', { params: { slug: project(), groupId }, body: until })).issue);
      if (out.json) return out.data({ updated });
      const what =
        until.ignoreDuration !== undefined
          ? `for ${until.ignoreDuration} min`
          : until.ignoreCount !== undefined
            ? `until ${until.ignoreCount} more events`
            : until.ignoreUserCount !== undefined
              ? `until ${until.ignoreUserCount} more users`
              : until.ignoreUntil !== undefined
                ? `until ${until.ignoreUntil}`
                : 'until it escalates';
      out.print(`${updated.length} issue${updated.length === 1 ? '' : 's'} ignored ${what}`);
      return;
    }
    const next = action === 'resolve' && (opts as { inNextDeploy?: boolean }).inNextDeploy === true;
    const r = await actOnIssues(client, project(), { action, groupIds: ids, ...(next ? { inNextDeploy: true as const } : {}) });
    if (out.json) return out.data(r);
    const done = next ? 'resolving in next deploy' : action === 'reopen' ? 'reopened' : `${action}d`;
    out.print(`${r.updated.length} issue${r.updated.length === 1 ? '' : 's'} ${done}`);
  },
});

export const errors: Family = {
  groups: { errors: 'triage error issues' },
  commands: [
    {
      name: 'errors list',
      project: true,
      options: () => [
        new Option('--status <status>').choices(['unresolved', 'resolved', 'ignored']).default('unresolved'),
        new Option('--environment <env>').choices(['production', 'preview', 'development']),
        new Option('--sort <sort>').choices(['count', 'lastSeen']).default('count'),
        new Option('--limit <n>', 'at most this many').default('25'),
      ],
      async run({ client, out, project }, _args, opts) {
        const o = opts as { status: string; environment?: string; sort: string; limit: string };
        const r = await listIssues(client, project(), {
          status: o.status,
          sort: o.sort,
          limit: o.limit,
          ...(o.environment ? { environment: o.environment } : {}),
        });
        if (out.json) return out.data(r);
        out.table(
          r.data.map((i) => ({ id: i.groupId, status: i.status, count: i.count, last: i.lastSeen, issue: `${i.name}: ${i.message}` })),
          ['id', 'status', 'count', 'last', 'issue'],
        );
      },
    },
    {
      name: 'errors show',
      args: '<groupId>',
      description: 'the stack, your frames marked >',
      project: true,
      async run({ client, out, project }, [id]) {
        const r = await getIssue(client, project(), id!);
        if (out.json) return out.data(r);
        const i = r.issue;
        out.print(`${out.paint('bold', `${i.name}: ${i.message}`)}`);
        out.print(`${i.status}, ${i.count} events, first ${i.firstSeen}, last ${i.lastSeen}`);
        if (i.culprit) out.print(`culprit: ${i.culprit}`);
        out.print('');
        for (const line of i.stack.split('\n').slice(0, 60)) {
          if (/^\s+at /.test(line)) out.print(libraryFrame(line) ? out.paint('dim', `  ${line.trim()}`) : `${out.paint('ok', '>')} ${line.trim()}`);
          else out.print(line);
        }
        if (i.suggestion) out.print(`\nhint: ${i.suggestion}`);
      },
    },
    act('resolve'),
    act('ignore'),
    act('reopen'),
    {
      name: 'errors merge',
      args: '<targetId> <groupIds...>',
      description: "merge issues into the first one (Sentry's merge): later events of theirs land in it",
      project: true,
      async run({ client, out, project }, [target, ...others]) {
        const r = await client.api.call('mergeIssues', { params: { slug: project(), groupId: target! }, body: { groupIds: others } });
        if (out.json) return out.data(r);
        out.print(`${others.length} issue${others.length === 1 ? '' : 's'} merged into ${r.issue.groupId} (${r.issue.count} events)`);
      },
    },
  ],
};
