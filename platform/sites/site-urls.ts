import { publicBaseUrl, type Config } from '../config.ts';

/**
 * Where the platform serves a project's site and each deploy, as people open them: `<slug>.<SITES_DOMAIN>` and
 * `<deploy-id>.<SITES_DOMAIN>` (`dep-…`, `-` for `_`), on the public base URL's scheme and port.
 */
export function siteUrls(config: Pick<Config, 'PUBLIC_BASE_URL' | 'PORT' | 'SITES_DOMAIN'>) {
  const base = new URL(publicBaseUrl(config));
  const at = (label: string) => `${base.protocol}//${label}.${config.SITES_DOMAIN}${base.port ? `:${base.port}` : ''}/`;
  return {
    project: (slug: string) => at(slug),
    deploy: (deployId: string) => at(deployId.replace(/_/g, '-')),
  };
}
