import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import { serviceHostRule } from '../../platform/sites/service-hosts.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { AUTH } from '../auth/route-auth.ts';
import { projectOf } from '../auth/auth-plugin.ts';
import { domainsRepository } from './domains-repository.ts';
import { declared } from '../declared-route.ts';

/**
 * `/v1/projects/:slug/domains`: custom domains a project's production site answers on (spec §4.1 "domains"), as
 * Vercel and Netlify verify them:
 *   1. add      the service's own hosts and IP addresses in any form (service-hosts.ts) are refused (400 domain_reserved); a domain another
 *               project serves is 409 domain_taken; otherwise a pending claim with a TXT record to add
 *   2. verify   `_service-challenge.<domain>` must hold the token (looked up through the TXT resolver port); then
 *               the domain serves this project's live deploy, and other projects' pending claims are dropped
 *   3. list / remove
 * A domain serves nothing until verified (hosting/serve/site-server.ts). These are not the project's environmentHosts
 * (PATCH /v1/projects/:slug): those are host patterns that stamp events' environments and serve nothing.
 */

export function domainsRoutes(platform: Pick<Platform, 'clock' | 'config' | 'db' | 'txt'>): FastifyPluginAsyncZod {
  const { db, clock } = platform;
  const reserved = serviceHostRule(platform.config);
  return async (app) => {
    app.route({
      ...declared('listDomains'),
      config: { auth: AUTH.project('project:read') },
      handler: async (request) => ({ domains: await domainsRepository.list(db, projectOf(request).id) }),
    });

    app.route({
      ...declared('addDomain'),
      config: { auth: AUTH.user },
      handler: async (request, reply) => {
        const project = projectOf(request);
        const domain = request.body.domain.replace(/\.$/, '');
        const why = reserved(domain);
        if (why) throw new ServiceError('domain_reserved', `${domain} cannot be a project's domain: ${why}`);
        const owner = await domainsRepository.verifiedOwner(db, domain);
        if (owner && owner !== project.id) throw new ServiceError('domain_taken', `${domain} is already served by another project`);
        return reply.code(201).send({ domain: await domainsRepository.claim(db, project.id, domain, request.body.serves) });
      },
    });

    app.route({
      ...declared('verifyDomain'),
      config: { auth: AUTH.user },
      handler: async (request) => {
        const project = projectOf(request);
        const found = await domainsRepository.get(db, project.id, request.params.domain.toLowerCase());
        if (!found) throw new ServiceError('not_found', 'no such domain on this project');
        if (found.verified) return { domain: found };
        // A claim made before its form was reserved (`127.1`, `0x7f000001`: issue 38) is never verified.
        const why = reserved(found.domain);
        if (why) throw new ServiceError('domain_reserved', `${found.domain} cannot be a project's domain: ${why}`);
        let records: string[];
        try {
          records = await platform.txt.resolveTxt(found.verification.name);
        } catch (err) {
          throw new ServiceError(
            'domain_unverified',
            `the TXT record ${found.verification.name} could not be looked up (${(err as NodeJS.ErrnoException).code ?? 'error'}); try again`,
          );
        }
        if (!records.includes(found.verification.value)) {
          throw new ServiceError(
            'domain_unverified',
            `add a TXT record ${found.verification.name} with the value ${found.verification.value}, then verify again (found ${records.length ? records.map((r) => JSON.stringify(r.slice(0, 80))).join(', ') : 'no TXT record'})`,
          );
        }
        if (!(await domainsRepository.markVerified(db, project.id, found.domain, clock.now())))
          throw new ServiceError('domain_taken', `${found.domain} is already served by another project`);
        return { domain: (await domainsRepository.get(db, project.id, found.domain))! };
      },
    });

    app.route({
      ...declared('removeDomain'),
      config: { auth: AUTH.user },
      handler: async (request, reply) => {
        if (!(await domainsRepository.remove(db, projectOf(request).id, request.params.domain.toLowerCase())))
          throw new ServiceError('not_found', 'no such domain on this project');
        return reply.code(204).send(null);
      },
    });
  };
}
