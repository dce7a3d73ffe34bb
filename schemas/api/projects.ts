import { z } from 'zod';
import { BranchSchema } from '../deploys.ts';
import { hostPatternSchema } from '../host-pattern.ts';
import { GuardedRolloutPatch, GuardedRolloutSchema } from '../guarded-rollout.ts';
import { errorAnswers, SlugParams } from './common.ts';
import { DeploySchema } from './deploys.ts';
import { ROUTES } from './route-table.ts';
import { routeShapes } from './route-shape.ts';

/** Projects (spec §1, §4.1): create, list, the dashboard rollup, and settings (name, branch, environment hosts, source maps). */
const MAX_HOST_PATTERNS = 50;

/** A project's slug: lowercase a-z0-9 and hyphens, 3 to 40 characters, not starting or ending with a hyphen. */
export const SLUG_PATTERN = /^[a-z0-9](?:[a-z0-9-]{1,38})[a-z0-9]$/;
export const SlugSchema = z.string().regex(SLUG_PATTERN, 'lowercase a-z, 0-9 and hyphens, 3 to 40 characters, not starting or ending with a hyphen');
const HostPatternSchema = hostPatternSchema({ wildcard: true, message: 'a hostname, optionally with a leading "*." and a port' });
const HostPatternListSchema = z
  .array(HostPatternSchema)
  .max(MAX_HOST_PATTERNS)
  .transform((l) => [...new Set(l)]);

/**
 * What the project's hosts tell: an event whose page (Origin) matches a production pattern is stamped production, a
 * preview one preview (spec §7.4), and with `ingestOrigins` set these hosts may send too (§7.3). They serve nothing and
 * prove nothing: the domains a site answers on are the custom domains, claimed and verified apart (ROUTES.addDomain).
 * The field was `domains` until issue 39: one word for two things.
 */
export const ENVIRONMENT_HOSTS_DESCRIPTION = `host patterns that stamp an event's environment from its page's Origin (and, when ingestOrigins is set, may send events); "*.x" matches subdomains of x; "host:port" matches only that port, "host" any port. They serve nothing: a site's custom domains are ${ROUTES.listDomains.path}`;
export const EnvironmentHostsSchema = z.object({ production: z.array(z.string()), preview: z.array(z.string()) }).describe(ENVIRONMENT_HOSTS_DESCRIPTION);

/**
 * The old name of `environmentHosts`, refused by name (400 invalid_request saying the new one) rather than ignored: a
 * caller still sending it would otherwise believe the hosts were set, or that a domain was added.
 */
export const RENAMED_DOMAINS_MESSAGE = `renamed: send environmentHosts ({ production, preview } host patterns for environment stamping); a custom domain a site answers on is claimed with ${ROUTES.addDomain.method} ${ROUTES.addDomain.path}`;
const RenamedDomains = z.never(RENAMED_DOMAINS_MESSAGE).optional().describe(`refused: ${RENAMED_DOMAINS_MESSAGE}`);

export const ProjectSchema = z.object({
  id: z.string(),
  slug: z.string(),
  name: z.string(),
  defaultBranch: z.string(),
  environmentHosts: EnvironmentHostsSchema,
  serveSourceMaps: z
    .boolean()
    .describe(
      "whether the project's sites serve its builds' `*.map` files to anyone (default false: a `.map` answers 404, as a missing file; the maps are kept privately for symbolication either way)",
    ),
  guardedRollout: GuardedRolloutSchema.describe(
    "guarded rollout (issue 41): each new production deploy is watched for `windowMinutes` after it goes live and compared with the previous deploy's same span; past a threshold it is `degraded` (deploy.degraded is sent) and, with `autoRollback`, the previous deploy is made live again",
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
  environmentHosts: z
    .object({ production: HostPatternListSchema.default([]), preview: HostPatternListSchema.default([]) })
    .optional()
    .describe(ENVIRONMENT_HOSTS_DESCRIPTION),
  domains: RenamedDomains,
});
export type CreateProjectBody = z.infer<typeof CreateProjectBody>;

export const PatchProjectBody = z
  .object({
    name: z.string().trim().min(1).max(100).optional(),
    defaultBranch: BranchSchema.optional(),
    environmentHosts: z
      .object({ production: HostPatternListSchema.optional(), preview: HostPatternListSchema.optional() })
      .optional()
      .describe(`each list given replaces the stored one; ${ENVIRONMENT_HOSTS_DESCRIPTION}`),
    domains: RenamedDomains,
    serveSourceMaps: z.boolean().optional().describe("serve the builds' `*.map` files on the project's sites (applies within 2 s)"),
    guardedRollout: GuardedRolloutPatch.optional().describe('the fields given replace the stored ones (thresholds one by one); applies from the next sweep'),
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

const tags = ['projects'];

/** The family's routes (paths in route-table.ts). */
export const projectRoutes = routeShapes({
  createProject: { tags, summary: 'Create a project', body: CreateProjectBody, response: { 201: ProjectAnswer, ...errorAnswers(400, 409) } },
  listProjects: { tags, summary: "The signed-in user's projects", response: { 200: ProjectList } },
  getProject: { tags, summary: 'Dashboard rollup of one project', params: SlugParams, response: { 200: ProjectRollupAnswer, ...errorAnswers(404) } },
  updateProject: {
    tags,
    summary: 'Change name, default branch, environment hosts, or whether the sites serve their source maps',
    params: SlugParams,
    body: PatchProjectBody,
    response: { 200: ProjectAnswer, ...errorAnswers(400) },
  },
});
