import { Option } from 'commander';
import type { ArgsOf } from '../../../schemas/api/client.ts';
import type { Client } from '../client.ts';
import type { Family } from './command.ts';

/** `cx keys list | create | revoke`: a project's ingest keys and API keys. */

const _e = encodeURIComponent;
type KeyBody = { kind: 'ingest'; name?: string } | { kind: 'live' | 'test'; name?: string; scopes: string[] };
const listKeys = (client: Client, slug: string) => client.api.call('listKeys', { params: { slug } });
// Scopes as typed: the service names an unknown one in its refusal, which the CLI shows.
const createKey = (client: Client, slug: string, body: KeyBody) =>
  client.api.call('createKey', { params: { slug }, body: body as ArgsOf<'createKey'>['body'] });
const revokeKey = (client: Client, slug: string, id: string) => client.api.call('revokeKey', { params: { slug, id } });

export const keys: Family = {
  groups: { keys: 'project keys' },
  commands: [
    {
      name: 'keys list',
      project: true,
      async run({ client, out, project }) {
        const r = await listKeys(client, project());
        if (out.json) return out.data(r);
        out.table(
          r.keys.map((k) => ({ id: k.id, kind: k.kind, name: k.name, key: k.hint, scopes: k.scopes.join(','), revoked: k.revoked ? 'yes' : '' })),
          ['id', 'kind', 'name', 'key', 'scopes', 'revoked'],
        );
      },
    },
    {
      name: 'keys create',
      description: 'a new key; its token is shown once',
      project: true,
      options: () => [
        new Option('--kind <kind>').choices(['ingest', 'live', 'test']).default('ingest'),
        new Option('--name <name>'),
        new Option('--scope <scope...>', 'scopes of an API key, e.g. errors:read deploys:write'),
      ],
      async run({ client, out, project }, _args, opts) {
        const o = opts as { kind: 'ingest' | 'live' | 'test'; name?: string; scope?: string[] };
        // An ingest key has no scopes: the API refuses the field on one.
        const body: KeyBody = o.kind === 'ingest' ? { kind: o.kind, name: o.name } : { kind: o.kind, name: o.name, scopes: o.scope ?? [] };
        const r = await createKey(client, project(), body);
        if (out.json) return out.data(r);
        out.print(`Key ${r.key.id} (${r.key.kind}). Its token is shown only now:\n${out.paint('bold', r.key.token)}`);
        if (r.key.dsn) out.print(`Sentry DSN: ${r.key.dsn}`);
      },
    },
    {
      name: 'keys revoke',
      args: '<keyId>',
      project: true,
      async run({ client, out, project }, [id]) {
        const r = await revokeKey(client, project(), id!);
        if (out.json) return out.data(r);
        out.print(`Revoked ${id}`);
      },
    },
  ],
};
