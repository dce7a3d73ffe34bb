import { Option } from 'commander';
import type { IssueAction } from '../../../schemas/api/errors.ts';
import type { Client } from '../client.ts';
import type { CommandDef, Family } from './command.ts';

/** `cx errors list | show | resolve | ignore | reopen`: error issues triaged from the terminal. */

const _e = encodeURIComponent;
const listIssues = (client: Client, slug: string, query: Record<string, string>) => client.api.call('listIssues', { params: { slug }, query });
const getIssue = (client: Client, slug: string, id: string) => client.api.call('getIssue', { params: { slug, groupId: id } });
const actOnIssues = (client: Client, slug: string, body: { action: IssueAction; groupIds: string[] }) =>
  client.api.call('bulkIssues', { params: { slug }, body });

/** A frame is the app's own unless it is a library's, Node's own, or a bundled vendor chunk (as the console folds them). */
const libraryFrame = (line: string) => /node_modules|\(node:|node:internal|<anonymous>|\bnative\b|vendor/.test(line);

const act = (action: IssueAction): CommandDef => ({
  name: `errors ${action}`,
  args: '<groupIds...>',
  project: true,
  async run({ client, out, project }, ids) {
    const r = await actOnIssues(client, project(), { action, groupIds: ids });
    if (out.json) return out.data(r);
    out.print(`${r.updated.length} issue${r.updated.length === 1 ? '' : 's'} ${action === 'reopen' ? 'reopened' : `${action}d`}`);
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
  ],
};
