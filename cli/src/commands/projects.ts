import { Option } from 'commander';
import type { CreateProjectBody } from '../../../schemas/api/projects.ts';
import type { Client } from '../client.ts';
import type { Family } from './command.ts';

/** `cx projects list | create | open`. */

const listProjects = (client: Client) => client.api.call('listProjects');
const createProject = (client: Client, body: CreateProjectBody) => client.api.call('createProject', { body });

export const projects: Family = {
  groups: { projects: 'list, create and open projects' },
  commands: [
    {
      name: 'projects list',
      description: 'your projects',
      async run({ client, out }) {
        const r = await listProjects(client);
        if (out.json) return out.data(r);
        out.table(
          r.projects.map((p) => ({ slug: p.slug, name: p.name, branch: p.defaultBranch })),
          ['slug', 'name', 'branch'],
        );
      },
    },
    {
      name: 'projects create',
      args: '<name>',
      description: 'create a project',
      options: () => [new Option('--slug <slug>', 'the URL name')],
      async run({ client, out }, [name], opts) {
        const slug = opts.slug as string | undefined;
        const r = await createProject(client, { name: name!, ...(slug ? { slug } : {}) });
        if (out.json) return out.data(r);
        out.print(`Created ${out.paint('bold', r.project.slug)}: ${client.base}/projects/${r.project.slug}`);
      },
    },
    {
      name: 'projects open',
      args: '<slug>',
      description: "print the project's console URL",
      async run({ client, out }, [slug]) {
        const url = `${client.base}/projects/${encodeURIComponent(slug!)}`;
        if (out.json) return out.data({ url });
        out.print(url);
      },
    },
  ],
};
