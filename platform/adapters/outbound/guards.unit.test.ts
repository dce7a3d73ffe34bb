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

  it('ALLOW_LOCAL_OUTBOUND relaxes webhooks and monitors alone: repositories, builds and provider APIs stay public-only', async () => {
    const guard = createPublicInternetGuard({ allowLocal: true, resolve: async () => [{ address: '10.1.2.3', family: 4 }] });
    expect(await refusal(guard.checkUrl('http://127.0.0.1:9/hook', 'webhook'))).toBe('allowed');
    expect(await refusal(guard.checkUrl('http://127.0.0.1:9/health', 'uptime'))).toBe('allowed');
    expect(await refusal(guard.checkUrl('http://demo.localhost:8080/', 'uptime'))).toBe('allowed');
    expect(await refusal(guard.checkUrl('https://10.0.0.1/hook', 'webhook'))).toBe('url_private_host');
    expect(await refusal(guard.checkUrl('http://169.254.169.254/latest', 'uptime'))).toBe('url_private_host');
    expect(await refusal(guard.checkUrl('http://rebinds.example/', 'uptime'))).toBe('url_private_host');
    expect(await refusal(guard.checkUrl('https://127.0.0.1/app.git', 'repository'))).toBe('url_private_host');
    expect(await refusal(guard.resolveHost('127.0.0.1', 'build_egress'))).toBe('url_private_host');
    expect(await refusal(guard.resolveHost('demo.localhost', 'build_egress'))).toBe('url_private_host');
    expect(await refusal(guard.checkUrl('http://127.0.0.1:9/api', 'provider_api'))).toBe('url_not_https');
  });

  it('localhost names are loopback, never asked of DNS (RFC 6761), and refused as such without the switch', async () => {
    const asked: string[] = [];
    const resolve = async (host: string) => (asked.push(host), [{ address: '93.184.216.34', family: 4 }]);
    const local = createPublicInternetGuard({ allowLocal: true, resolve });
    expect(await local.resolveHost('app.localhost', 'uptime')).toEqual([{ address: '127.0.0.1', family: 4 }]);
    const production = createPublicInternetGuard({ resolve });
    expect(await refusal(production.resolveHost('app.localhost', 'uptime'))).toBe('url_private_host');
    expect(await refusal(production.resolveHost('localhost', 'webhook'))).toBe('url_private_host');
    expect(asked).toEqual([]);
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
