import { z } from 'zod';
import { BranchSchema } from '../deploys.ts';
import { hostPatternSchema } from '../host-pattern.ts';
import { GuardedRolloutPatch, GuardedRolloutSchema } from '../guarded-rollout.ts';
import { errorAnswers, NoContent, SlugParams } from './common.ts';
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
  previewProtection: z
    .object({ enabled: z.boolean(), passwordSet: z.boolean() })
    .describe(
      `previews that only the team sees (issue 42): with \`enabled\`, the per-deploy hosts (\`dep-…\`) answer a password page until the visitor types the password (when \`passwordSet\`) or opens a share link (${ROUTES.createPreviewLink.path}); production hosts stay public. On for new projects, off for projects from before`,
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
    previewProtection: z
      .object({
        enabled: z.boolean().optional(),
        password: z
          .string()
          .min(8)
          .max(200)
          .nullable()
          .optional()
          .describe('write-only (kept as a scrypt hash); a new one signs every visitor out; null removes it (share links only)'),
      })
      .strict()
      .optional()
      .describe('protect the per-deploy hosts (applies within 2 s)'),
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

/** Share links of protected previews: how long one opens them, and how many may be open at once per project. */
/** The path on a protected preview's host that a share link opens (hosting/serve/preview-gate.ts). */
export const PREVIEW_SHARE_PREFIX = '/.cx/share/';
export const PREVIEW_LINKS = { defaultDays: 7, maxDays: 30, maxOpen: 50, listed: 100 };
export const CreatePreviewLinkBody = z
  .object({
    days: z.number().int().min(1).max(PREVIEW_LINKS.maxDays).default(PREVIEW_LINKS.defaultDays).describe('how long the link opens the previews'),
    deployId: z.string().max(64).optional().describe("a deploy of the project: `url` is then the link on that deploy's host"),
  })
  .strict();
export const PreviewLinkSchema = z.object({
  id: z.string().describe('`pvl_...`'),
  createdAt: z.string(),
  expiresAt: z.string(),
  revokedAt: z.string().nullable(),
});
export const PreviewLinkAnswer = z.object({
  link: PreviewLinkSchema.extend({
    token: z.string().describe('shown once'),
    path: z.string().describe("opens any of the project's per-deploy hosts: `https://<dep-host>` + path"),
    url: z.string().nullable().describe('the link on the host of `deployId` when given'),
  }),
});
export type PreviewLinkAnswer = z.infer<typeof PreviewLinkAnswer>;
export const PreviewLinkList = z.object({ links: z.array(PreviewLinkSchema) });
const PreviewLinkParams = z.object({ slug: z.string(), id: z.string().max(64) });

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
  createPreviewLink: {
    tags,
    summary: "A share link that opens the project's protected previews until it expires or is revoked",
    description: `Like a deploy log's share link: the token is shown once. At most ${PREVIEW_LINKS.maxOpen} links open at once (409 conflict past it).`,
    params: SlugParams,
    body: CreatePreviewLinkBody,
    response: { 201: PreviewLinkAnswer, ...errorAnswers(400, 404, 409) },
  },
  listPreviewLinks: {
    tags,
    summary: "The project's preview share links, newest first (no tokens)",
    params: SlugParams,
    response: { 200: PreviewLinkList, ...errorAnswers(404) },
  },
  revokePreviewLink: {
    tags,
    summary: 'Revoke a preview share link: its cookies stop opening the previews within 2 s',
    params: PreviewLinkParams,
    response: { 204: NoContent, ...errorAnswers(404) },
  },
});
