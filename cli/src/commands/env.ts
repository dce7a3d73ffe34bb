import { Option } from 'commander';
import type { EnvTarget, EnvVar } from '../../../schemas/api/env.ts';
import type { Client } from '../client.ts';
import { CliExit, EXIT, type Family } from './command.ts';

/**
 * `cx env add | ls | rm`: a project's build variables per environment (/v1/projects/:slug/env). `add` sets a value for
 * production and preview builds unless `--production` or `--preview` says one, `--branch` makes a preview override for
 * one branch; `rm` takes a variable's id, or its key (with the same flags to say which of the key's values).
 */

const listEnv = (client: Client, slug: string) => client.api.call('listEnvVars', { params: { slug } });
const createEnv = (client: Client, slug: string, body: { key: string; value: string; secret: boolean; target?: EnvTarget[]; branch?: string }) =>
  client.api.call('createEnvVar', { params: { slug }, body });
const deleteEnv = (client: Client, slug: string, id: string) => client.api.call('deleteEnvVar', { params: { slug, id } });

const targetOptions = () => [
  new Option('--production', 'production builds only'),
  new Option('--preview', 'preview builds only'),
  new Option('-b, --branch <branch>', "this branch's preview builds only (an override of the preview value)"),
];
/** The environments the flags name; undefined for both (or, with a branch, the service's preview default). */
function targetOf(opts: Record<string, unknown>): EnvTarget[] | undefined {
  const t: EnvTarget[] = [...(opts.production ? ['production' as const] : []), ...(opts.preview ? ['preview' as const] : [])];
  return t.length ? t : undefined;
}
const describeVar = (v: Pick<EnvVar, 'key' | 'target' | 'branch'>) => `${v.key} (${v.target.join(', ')}${v.branch ? `, branch ${v.branch}` : ''})`;

export const env: Family = {
  groups: { env: "the project's build variables, per environment" },
  commands: [
    {
      name: 'env ls',
      description: 'the build variables with their environments (secret values masked)',
      project: true,
      async run({ client, out, project }) {
        const r = await listEnv(client, project());
        if (out.json) return out.data(r);
        out.table(
          r.env.map((v) => ({ id: v.id, key: v.key, value: v.value, environments: v.target.join(','), branch: v.branch ?? '', secret: v.secret ? 'yes' : '' })),
          ['id', 'key', 'value', 'environments', 'branch', 'secret'],
        );
      },
    },
    {
      name: 'env add',
      args: '<key> <value>',
      description: 'add a build variable (production and preview unless --production or --preview)',
      project: true,
      options: () => [...targetOptions(), new Option('--secret', 'write-only, masked in build logs')],
      async run({ client, out, project }, [key, value], opts) {
        const branch = opts.branch as string | undefined;
        const target = targetOf(opts);
        const r = await createEnv(client, project(), {
          key: key!,
          value: value!,
          secret: Boolean(opts.secret),
          ...(target ? { target } : {}),
          ...(branch ? { branch } : {}),
        });
        if (out.json) return out.data(r);
        out.print(`Added ${describeVar(r.env)}: ${r.env.id}`);
      },
    },
    {
      name: 'env rm',
      args: '<keyOrId>',
      description: "remove a build variable: its id, or its key (--production, --preview, --branch say which of the key's values)",
      project: true,
      options: targetOptions,
      async run({ client, out, project }, [which], opts) {
        const slug = project();
        let id = which!;
        if (!id.startsWith('env_')) {
          const target = targetOf(opts);
          const branch = (opts.branch as string | undefined) ?? null;
          const found = (await listEnv(client, slug)).env.filter(
            (v) => v.key === which && v.branch === branch && (!target || target.every((t) => v.target.includes(t))),
          );
          if (found.length !== 1)
            throw new CliExit(
              EXIT.usage,
              found.length
                ? `${which} has ${found.length} values: name one by id (${found.map((v) => `${v.id}: ${describeVar(v)}`).join('; ')})`
                : `no variable ${which}${branch ? ` on branch ${branch}` : ''}${target ? ` for ${target.join(' and ')}` : ''}`,
            );
          id = found[0]!.id;
        }
        await deleteEnv(client, slug, id);
        if (out.json) out.data({ deleted: id });
        else out.print(`Removed ${id}`);
      },
    },
  ],
};
