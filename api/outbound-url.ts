import type { Platform } from '../platform/platform.ts';
import { OutboundUrlError, type OutboundUse } from '../platform/ports/outbound-url-guard.ts';
import { ServiceError } from '../schemas/error-codes.ts';

/**
 * A URL a caller gives for the service to dial later (a webhook endpoint, a repository, an inbox's webhook), checked by
 * the outbound URL guard: its canonical form, or the guard's refusal as our error code (url_not_https,
 * url_private_host, ...) naming the field when one is given.
 */
export async function checkedUrl(platform: Pick<Platform, 'outbound'>, raw: string, use: OutboundUse, field?: string): Promise<string> {
  try {
    return (await platform.outbound.checkUrl(raw, use)).href;
  } catch (err) {
    if (err instanceof OutboundUrlError) throw new ServiceError(err.code, field ? `${field}: ${err.message}` : err.message);
    throw err;
  }
}
