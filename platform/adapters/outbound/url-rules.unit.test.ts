import { describe, expect, it } from 'vitest';
import { blockedReason, embeddedIPv4, guardedLookup, parseWebhookUrl, validateWebhookUrl } from './url-rules.ts';

describe('the outbound URL rules', () => {
  it('classifies addresses: only public unicast passes', () => {
    const blocked = [
      '0.0.0.0',
      '10.1.2.3',
      '100.64.0.1',
      '100.127.255.255',
      '127.0.0.1',
      '169.254.169.254',
      '172.31.255.255',
      '192.0.0.1',
      '192.0.2.5',
      '192.168.0.1',
      '198.18.3.4',
      '198.51.100.1',
      '203.0.113.1',
      '224.0.0.251',
      '240.1.1.1',
      '255.255.255.255',
      '::',
      '::1',
      '::ffff:127.0.0.1',
      '::ffff:10.0.0.1',
      '::ffff:0:7f00:1',
      '::127.0.0.1',
      '64:ff9b::a9fe:a9fe',
      '64:ff9b:1::a00:1',
      '2002:c0a8:101::1',
      '2001::1',
      '2001:db8::1',
      'fc00::1',
      'fd00::1',
      'fe80::1',
      'fec0::1',
      'ff02::1',
      '100::1',
      '::2:3',
      '4000::1',
    ];
    for (const a of blocked) expect({ a, blocked: blockedReason(a) !== null }).toEqual({ a, blocked: true });
    for (const a of [
      '8.8.8.8',
      '1.1.1.1',
      '100.63.255.255',
      '100.128.0.0',
      '172.32.0.1',
      '2606:4700::1111',
      '::ffff:8.8.8.8',
      '64:ff9b::808:808',
      '2002:808:808::1',
    ]) {
      expect({ a, reason: blockedReason(a) }).toEqual({ a, reason: null });
    }
    expect(embeddedIPv4('2002:7f00:1::')).toBe('127.0.0.1');
  });

  it('lets loopback through only when the test switch is on, and nothing else private', () => {
    expect(blockedReason('127.0.0.1', { allowLoopback: true })).toBeNull();
    expect(blockedReason('::1', { allowLoopback: true })).toBeNull();
    expect(blockedReason('10.0.0.1', { allowLoopback: true })).not.toBeNull();
    expect(blockedReason('169.254.169.254', { allowLoopback: true })).not.toBeNull();
  });

  it('reads numeric host forms the way a resolver would', () => {
    for (const h of ['0x7f.1', '2130706433', '017700000001', '0177.1', '0x7f.0.0.1', '127.000.000.001']) {
      expect(() => parseWebhookUrl(`https://${h}/`)).toThrow(/127\.0\.0\.1/);
    }
  });

  it('refuses a name when any of its addresses is private, and an unresolvable one', async () => {
    const resolve = async (h: string) =>
      h === 'mixed.test'
        ? [
            { address: '8.8.8.8', family: 4 },
            { address: '10.0.0.1', family: 4 },
          ]
        : [];
    await expect(validateWebhookUrl('https://mixed.test/', { resolve })).rejects.toMatchObject({ code: 'url_private_host' });
    await expect(validateWebhookUrl('https://empty.test/', { resolve })).rejects.toMatchObject({ code: 'url_unresolvable' });
    await expect(validateWebhookUrl('https://localhost/')).rejects.toMatchObject({ code: 'url_private_host' });
  });

  it('the connect-time lookup refuses a rebinding answer and passes checked addresses on', async () => {
    let answer = '8.8.8.8';
    const lookup = guardedLookup({ resolve: async () => [{ address: answer, family: 4 }] });
    const call = (all: boolean) =>
      new Promise<{ err: unknown; addr: unknown }>((r) =>
        (lookup as unknown as (h: string, o: object, cb: (e: unknown, a: unknown) => void) => void)('rebind.test', { all }, (err, addr) => r({ err, addr })),
      );
    expect(await call(false)).toEqual({ err: null, addr: '8.8.8.8' });
    answer = '127.0.0.1';
    const second = await call(true);
    expect((second.err as { code: string }).code).toBe('url_private_host');
  });
});
