import { Option } from 'commander';
import type { PatchProjectBody } from '../../../schemas/api/projects.ts';
import type { Client } from '../client.ts';
import { CliExit, type CommandDef, EXIT, type Family } from './command.ts';

/**
 * `cx previews status | on | off | password | links | share | revoke`: who may open a project's per-deploy hosts
 * (issue 42, "Previews that only the team sees"). `on` / `off` and `password` change the project's
 * `previewProtection` (PATCH /v1/projects/:slug); `share` makes a share link (its token is shown once), `links` lists
 * them and `revoke` ends one (/v1/projects/:slug/preview-links). A password is read from CX_PREVIEW_PASSWORD when the
 * argument is left out, so it need not stand in the shell's history.
 */

const protection = async (client: Client, slug: string) => (await client.api.call('getProject', { params: { slug } })).project.previewProtection;
const patchProtection = async (client: Client, slug: string, previewProtection: NonNullable<PatchProjectBody['previewProtection']>) =>
  (await client.api.call('updateProject', { params: { slug }, body: { previewProtection } })).project.previewProtection;
const listLinks = (client: Client, slug: string) => client.api.call('listPreviewLinks', { params: { slug } });
const createLink = (client: Client, slug: string, body: { days?: number; deployId?: string }) =>
  client.api.call('createPreviewLink', { params: { slug }, body });
const revokeLink = (client: Client, slug: string, id: string) => client.api.call('revokePreviewLink', { params: { slug, id } });

/** One line that says who opens the previews. */
const whoOpens = (p: { enabled: boolean; passwordSet: boolean }) =>
  !p.enabled
    ? 'Previews are public'
    : p.passwordSet
      ? 'Previews are protected: the password or a share link opens them'
      : 'Previews are protected: share links only';

/** `previews on` / `previews off`: the switch alone, the password kept. */
const turn = (verb: string, enabled: boolean, description: string): CommandDef => ({
  name: `previews ${verb}`,
  description,
  project: true,
  async run({ client, out, project }) {
    const p = await patchProtection(client, project(), { enabled });
    if (out.json) return out.data({ previewProtection: p });
    out.print(whoOpens(p));
  },
});

export const previews: Family = {
  groups: { previews: 'who may open the preview deploys: protection, password, share links' },
  commands: [
    {
      name: 'previews status',
      description: 'whether the per-deploy hosts are protected, and by a password',
      project: true,
      async run({ client, out, project }) {
        const p = await protection(client, project());
        if (out.json) return out.data({ previewProtection: p });
        out.print(whoOpens(p));
      },
    },
    turn('on', true, 'protect the per-deploy hosts (a password page, or a share link); production stays public'),
    turn('off', false, 'make the per-deploy hosts public again'),
    {
      name: 'previews password',
      args: '[password]',
      description: 'set the password that opens the previews (8-200 characters; else CX_PREVIEW_PASSWORD); --remove leaves share links only',
      project: true,
      options: () => [new Option('--remove', 'remove the password (share links only)')],
      async run({ client, out, project, io }, [given], opts) {
        const password = opts.remove ? null : (given ?? io.env.CX_PREVIEW_PASSWORD);
        if (opts.remove && given) throw new CliExit(EXIT.usage, 'give a password or --remove, not both');
        if (password === undefined || password === '') throw new CliExit(EXIT.usage, 'give the password (or set CX_PREVIEW_PASSWORD), or --remove');
        if (password !== null && (password.length < 8 || password.length > 200)) throw new CliExit(EXIT.usage, 'a preview password has 8 to 200 characters');
        const p = await patchProtection(client, project(), { password });
        if (out.json) return out.data({ previewProtection: p });
        out.print(`${password === null ? 'Password removed' : 'Password set (every visitor signed in before is signed out)'}. ${whoOpens(p)}`);
      },
    },
    {
      name: 'previews links',
      description: 'the share links: when each was made, until when it opens the previews, and whether it was revoked',
      project: true,
      async run({ client, out, project }) {
        const r = await listLinks(client, project());
        if (out.json) return out.data(r);
        out.table(
          r.links.map((l) => ({ id: l.id, created: l.createdAt, expires: l.expiresAt, revoked: l.revokedAt ?? '' })),
          ['id', 'created', 'expires', 'revoked'],
        );
      },
    },
    {
      name: 'previews share',
      description: 'make a share link that opens the previews (7 days unless --days; the link is shown once)',
      project: true,
      options: () => [
        new Option('--days <days>', 'how long it opens them (the service takes 1 to 30)'),
        new Option('--deploy <deployId>', "print the link on this deploy's host"),
      ],
      async run({ client, out, project }, _args, opts) {
        const days = opts.days === undefined ? undefined : Number(opts.days);
        if (days !== undefined && !Number.isInteger(days)) throw new CliExit(EXIT.usage, '--days is a whole number of days');
        const deployId = opts.deploy as string | undefined;
        const r = await createLink(client, project(), { ...(days === undefined ? {} : { days }), ...(deployId ? { deployId } : {}) });
        if (out.json) return out.data(r);
        out.print(`Share link ${r.link.id}, until ${r.link.expiresAt} (shown once):`);
        out.print(r.link.url ?? `on any preview's host (https://dep-….<sites domain>): ${r.link.path}`);
      },
    },
    {
      name: 'previews revoke',
      args: '<linkId>',
      description: 'end a share link: it opens nothing from now on',
      project: true,
      async run({ client, out, project }, [id]) {
        await revokeLink(client, project(), id!);
        if (out.json) out.data({ revoked: id });
        else out.print(`Revoked ${id}`);
      },
    },
  ],
};
