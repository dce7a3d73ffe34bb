import net from 'node:net';
import { isIpAddressForm } from '../../schemas/host-pattern.ts';
import { publicBaseUrl, type Config } from '../config.ts';

/**
 * Hosts that belong to the service and can never be a tenant's: the PUBLIC_BASE_URL host, `localhost` and anything
 * under it, loopback and unspecified addresses, any IP literal (in every form a browser or resolver reads as one:
 * `127.1`, `2130706433`, `0x7f000001`, `0177.0.0.1`; schemas/host-pattern.ts isIpAddressForm), and SITES_DOMAIN with its subdomains (those are
 * assigned by the platform: `<slug>.` and `<deploy-id>.`, never claimed). The site lookup refuses them before any
 * query, so the API and console always answer there, and the domains API refuses to claim them.
 */
export function serviceHostRule(config: Pick<Config, 'PUBLIC_BASE_URL' | 'PORT' | 'SITES_DOMAIN'>): (hostname: string) => string | undefined {
  const own = new URL(publicBaseUrl(config)).hostname.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  const sites = config.SITES_DOMAIN.toLowerCase();
  return (raw) => {
    const host = raw
      .toLowerCase()
      .replace(/\.$/, '')
      .replace(/^\[(.*)\]$/, '$1');
    if (host === own) return "the service's own host (PUBLIC_BASE_URL)";
    if (host === 'localhost' || host.endsWith('.localhost')) return 'localhost';
    if (net.isIP(host)) return 'an IP address';
    if (isIpAddressForm(host)) return `an IP address (browsers and resolvers read a name ending in a number as IPv4: ${raw} is one)`;
    if (host === sites || host.endsWith(`.${sites}`)) return `${sites} and its subdomains are assigned by the platform (SITES_DOMAIN)`;
    return undefined;
  };
}
