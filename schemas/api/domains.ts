import { z } from 'zod';
import { hostPatternSchema, isIpAddressForm } from '../host-pattern.ts';

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

export const ProjectDomainSchema = z.object({
  domain: z.string(),
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
export const ClaimDomainBody = z.object({ domain: DomainNameSchema }).strict();
