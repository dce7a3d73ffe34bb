import tls from 'node:tls';

/**
 * The TLS context outbound calls use when the outbound guard trusts a CA beyond the system's (a test receiver's
 * self-signed one): the system roots plus that CA. Building it from ~150 roots costs milliseconds of CPU, so it is
 * built once per CA and shared by every caller (webhook sends, uptime checks, provider API calls).
 */
const contexts = new Map<string, tls.SecureContext>();

export function extraCaContext(ca: string | Buffer | undefined): tls.SecureContext | undefined {
  if (ca === undefined) return undefined;
  const key = ca.toString();
  let ctx = contexts.get(key);
  if (!ctx) {
    ctx = tls.createSecureContext({ ca: [...tls.rootCertificates, key] });
    contexts.set(key, ctx);
  }
  return ctx;
}
