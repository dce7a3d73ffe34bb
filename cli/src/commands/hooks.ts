import { Option } from 'commander';
import type { ArgsOf } from '../../../schemas/api/client.ts';
import type { Client } from '../client.ts';
import type { Family } from './command.ts';

/** `cx hooks list | create | delete`: deploy hooks, URLs that deploy a branch when called. */

const _e = encodeURIComponent;
const listHooks = (client: Client, slug: string) => client.api.call('listDeployHooks', { params: { slug } });
// The branch is the service's to default or refuse (the project's default branch when absent): sent as typed.
const createHook = (client: Client, slug: string, body: { name: string; branch?: string }) =>
  client.api.call('createDeployHook', { params: { slug }, body: body as ArgsOf<'createDeployHook'>['body'] });
const deleteHook = (client: Client, slug: string, id: string) => client.api.call('deleteDeployHook', { params: { slug, id } });

export const hooks: Family = {
  groups: { hooks: 'deploy hooks' },
  commands: [
    {
      name: 'hooks list',
      project: true,
      async run({ client, out, project }) {
        const r = await listHooks(client, project());
        if (out.json) return out.data(r);
        out.table(
          r.hooks.map((h) => ({ id: h.id, name: h.name, branch: h.branch, created: h.createdAt })),
          ['id', 'name', 'branch', 'created'],
        );
      },
    },
    {
      name: 'hooks create',
      args: '<name>',
      description: 'a hook URL that deploys the branch',
      project: true,
      options: () => [new Option('-b, --branch <branch>')],
      async run({ client, out, project }, [name], opts) {
        const branch = opts.branch as string | undefined;
        const r = await createHook(client, project(), { name: name!, ...(branch ? { branch } : {}) });
        if (out.json) return out.data(r);
        out.print(`Hook ${r.hook.id} for ${r.hook.branch}. Its URL is shown only now:\n${out.paint('bold', r.hook.url)}`);
      },
    },
    {
      name: 'hooks delete',
      args: '<hookId>',
      project: true,
      async run({ client, out, project }, [id]) {
        await deleteHook(client, project(), id!);
        if (out.json) out.data({ deleted: id });
        else out.print(`Deleted ${id}`);
      },
    },
  ],
};
