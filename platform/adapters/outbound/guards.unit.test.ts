import { describe, expect, it } from 'vitest';
import { OutboundUrlError } from '../../ports/outbound-url-guard.ts';
import { createPublicInternetGuard } from './public-internet-guard.ts';
import { createTestOutboundGuard } from './test-guard.ts';

const refusal = async (p: Promise<unknown>) =>
  p.then(
    () => 'allowed',
    (e: unknown) => (e instanceof OutboundUrlError ? e.code : String(e)),
  );

describe('the outbound guard adapters', () => {
  it('production: public addresses only, for every use', async () => {
    const guard = createPublicInternetGuard({ resolve: async () => [{ address: '10.1.2.3', family: 4 }] });
    expect(await refusal(guard.checkUrl('https://127.0.0.1/hook', 'webhook'))).toBe('url_private_host');
    expect(await refusal(guard.checkUrl('https://git.internal.example/app.git', 'repository'))).toBe('url_private_host');
    expect(await refusal(guard.resolveHost('127.0.0.1', 'build_egress'))).toBe('url_private_host');
    expect(await refusal(guard.checkUrl('http://93.184.216.34/hook', 'webhook'))).toBe('url_not_https');
  });

  it('ALLOW_LOCAL_WEBHOOKS relaxes webhooks alone: repositories and builds stay public-only', async () => {
    const guard = createPublicInternetGuard({ allowLocalWebhooks: true });
    expect(await refusal(guard.checkUrl('http://127.0.0.1:9/hook', 'webhook'))).toBe('allowed');
    expect(await refusal(guard.checkUrl('https://10.0.0.1/hook', 'webhook'))).toBe('url_private_host');
    expect(await refusal(guard.checkUrl('https://127.0.0.1/app.git', 'repository'))).toBe('url_private_host');
    expect(await refusal(guard.resolveHost('127.0.0.1', 'build_egress'))).toBe('url_private_host');
  });

  it("the tests' guard lets only the named uses reach loopback, and nothing else private", async () => {
    const guard = createTestOutboundGuard({ loopback: ['build_egress'], ca: 'CERT' });
    expect(await refusal(guard.resolveHost('127.0.0.1', 'build_egress'))).toBe('allowed');
    expect(await refusal(guard.resolveHost('10.0.0.1', 'build_egress'))).toBe('url_private_host');
    expect(await refusal(guard.checkUrl('https://127.0.0.1/hook', 'webhook'))).toBe('url_private_host');
    expect(guard.extraCa).toBe('CERT');
    expect(createPublicInternetGuard().extraCa).toBeUndefined();
  });
});
