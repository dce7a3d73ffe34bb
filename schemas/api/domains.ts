import { z } from 'zod';
import { hostPatternSchema, isIpAddressForm } from '../host-pattern.ts';
import { errorAnswers, NoContent, SlugParams } from './common.ts';
import { routeShapes } from './route-shape.ts';

/** A project's custom domains (spec §4.1): claimed, proven by a DNS TXT record, then served. */
export const DomainParams = z.object({ slug: z.string(), domain: z.string().max(300) });
const DomainNameSchema = z
  .string()
  .max(300)
  .superRefine((d, ctx) => {
    // An IPv6 literal is refused by name rather than as a malformed hostname (IPv4 forms: domain_reserved, service-hosts.ts).
    if (d.includes(':') && isIpAddressForm(d)) ctx.addIssue({ code: 'custom', message: 'an IP address (IPv6) is not a domain', fatal: true });
  })
  .pipe(hostPatternSchema({ wildcard: false, message: 'a hostname (no port, no wildcard)' }).refine((d) => !d.includes(':'), 'a hostname without a port'));

/** What a verified domain serves: the project's live site, or its status page at `/` (issue 43). */
export const DOMAIN_SERVES = ['site', 'status'] as const;
export const ProjectDomainSchema = z.object({
  domain: z.string(),
  serves: z.enum(DOMAIN_SERVES).describe("`site`: the live deploy; `status`: the project's status page (GET /status/:slug) at `/`"),
  verified: z.boolean(),
  verifiedAt: z.string().nullable(),
  createdAt: z.string(),
  verification: z
    .object({ type: z.literal('TXT'), name: z.string(), value: z.string() })
    .describe('the DNS record that proves control: add it, then POST .../verify'),
});
export type ProjectDomain = z.infer<typeof ProjectDomainSchema>;
export const ProjectDomainAnswer = z.object({ domain: ProjectDomainSchema });
export type ProjectDomainAnswer = z.infer<typeof ProjectDomainAnswer>;
export const ProjectDomainList = z.object({ domains: z.array(ProjectDomainSchema) });
export type ProjectDomainList = z.infer<typeof ProjectDomainList>;
export const ClaimDomainBody = z
  .object({ domain: DomainNameSchema, serves: z.enum(DOMAIN_SERVES).default('site').describe('adding a claimed domain again changes what it serves') })
  .strict();

const tags = ['domains'];

/** The family's routes (paths in route-table.ts). */
export const domainRoutes = routeShapes({
  listDomains: { tags, summary: 'Custom domains and their verification state', params: SlugParams, response: { 200: ProjectDomainList } },
  addDomain: {
    tags,
    summary: 'Claim a custom domain; it serves once verified',
    description:
      "The service's own hosts, localhost, IP addresses (every IPv4 form a browser reads as one: `127.1`, `2130706433`, `0x7f000001`, `0177.0.0.1`) and SITES_DOMAIN with its subdomains are refused (400 domain_reserved); an IPv6 literal is 400 invalid_request. A domain another project serves is 409 domain_taken.",
    params: SlugParams,
    body: ClaimDomainBody,
    response: { 201: ProjectDomainAnswer, ...errorAnswers(400, 409) },
  },
  verifyDomain: {
    tags,
    summary: 'Check the TXT record and, when it holds the token, serve the domain',
    params: DomainParams,
    response: { 200: ProjectDomainAnswer, ...errorAnswers(400, 404, 409) },
  },
  removeDomain: { tags, summary: 'Stop serving a custom domain', params: DomainParams, response: { 204: NoContent, ...errorAnswers(404) } },
});
