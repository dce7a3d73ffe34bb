import { z } from 'zod';
import { BranchSchema } from '../deploys.ts';
import { hostPatternSchema } from '../host-pattern.ts';
import { DeploySchema } from './deploys.ts';

/** Projects (spec §1, §4.1): create, list, the dashboard rollup, and settings (name, branch, domains, source maps). */
const MAX_DOMAINS = 50;

/** A project's slug: lowercase a-z0-9 and hyphens, 3 to 40 characters, not starting or ending with a hyphen. */
export const SLUG_PATTERN = /^[a-z0-9](?:[a-z0-9-]{1,38})[a-z0-9]$/;
export const SlugSchema = z.string().regex(SLUG_PATTERN, 'lowercase a-z, 0-9 and hyphens, 3 to 40 characters, not starting or ending with a hyphen');
const HostnameSchema = hostPatternSchema({ wildcard: true, message: 'a hostname, optionally with a leading "*." and a port' });
const DomainListSchema = z
  .array(HostnameSchema)
  .max(MAX_DOMAINS)
  .transform((l) => [...new Set(l)]);

export const DomainsSchema = z
  .object({ production: z.array(z.string()), preview: z.array(z.string()) })
  .describe('hostnames; "*.x" matches subdomains of x; "host:port" matches only that port, "host" any port');

export const ProjectSchema = z.object({
  id: z.string(),
  slug: z.string(),
  name: z.string(),
  defaultBranch: z.string(),
  domains: DomainsSchema,
  serveSourceMaps: z
    .boolean()
    .describe(
      "whether the project's sites serve its builds' `*.map` files to anyone (default false: a `.map` answers 404, as a missing file; the maps are kept privately for symbolication either way)",
    ),
  createdAt: z.string(),
});
export type Project = z.infer<typeof ProjectSchema>;
export const ProjectAnswer = z.object({ project: ProjectSchema });
export type ProjectAnswer = z.infer<typeof ProjectAnswer>;
export const ProjectList = z.object({ projects: z.array(ProjectSchema) });
export type ProjectList = z.infer<typeof ProjectList>;

export const CreateProjectBody = z.object({
  name: z.string().trim().min(1).max(100),
  slug: SlugSchema.optional().describe('derived from the name when omitted'),
  defaultBranch: BranchSchema.optional().describe('default "main"; hooks on it deploy production'),
  domains: z.object({ production: DomainListSchema.default([]), preview: DomainListSchema.default([]) }).optional(),
});
export type CreateProjectBody = z.infer<typeof CreateProjectBody>;

export const PatchProjectBody = z
  .object({
    name: z.string().trim().min(1).max(100).optional(),
    defaultBranch: BranchSchema.optional(),
    domains: z
      .object({ production: DomainListSchema.optional(), preview: DomainListSchema.optional() })
      .optional()
      .describe('each list given replaces the stored one'),
    serveSourceMaps: z.boolean().optional().describe("serve the builds' `*.map` files on the project's sites (applies within 2 s)"),
  })
  .strict();
export type PatchProjectBody = z.infer<typeof PatchProjectBody>;

export const ProjectRollupSchema = ProjectSchema.extend({
  keys: z.object({ live: z.number(), test: z.number(), ingest: z.number() }).describe('active (unrevoked) keys by kind'),
  errors: z.object({
    open: z.number().describe('unresolved error issues'),
    openByEnvironment: z.record(z.string(), z.number()).describe('unresolved issues with occurrences in each environment'),
  }),
  deploys: z.object({
    live: DeploySchema.nullable().describe("the production deploy the production hosts serve (the newest ready one, or a rollback's choice)"),
    previews: z.array(DeploySchema).describe('the five newest preview deploys'),
  }),
  links: z.record(z.string(), z.string()),
});
export type ProjectRollup = z.infer<typeof ProjectRollupSchema>;
export const ProjectRollupAnswer = z.object({ project: ProjectRollupSchema });
export type ProjectRollupAnswer = z.infer<typeof ProjectRollupAnswer>;
