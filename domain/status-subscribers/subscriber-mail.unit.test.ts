import { describe, expect, it } from 'vitest';
import { mailableAddress, maskedAddress, notificationMail } from './subscriber-mail.ts';

describe('status subscriber mail rules', () => {
  it('takes one plain address, lower-cased, and nothing that could add a header or a second address', () => {
    expect(mailableAddress('  Reader@Example.COM ', 254)).toBe('reader@example.com');
    expect(mailableAddress('first.last+tag@mail.example.co.uk', 254)).toBe('first.last+tag@mail.example.co.uk');
    for (const bad of [
      '',
      'a@b',
      '@example.com',
      'a@example.com\r\nBcc: x@example.com',
      'a@example.com, b@example.com',
      'A <a@example.com>',
      'a@@example.com',
      '.a@example.com',
      'a..b@example.com',
      'a.@example.com',
      'a@-example.com',
      'a b@example.com',
      '"a"@example.com',
    ])
      expect(mailableAddress(bad, 254), JSON.stringify(bad)).toBeUndefined();
    expect(mailableAddress(`${'a'.repeat(60)}@${'b'.repeat(60)}.com`, 100)).toBeUndefined();
  });

  it('hides most of an address', () => {
    expect(maskedAddress('reader@example.com')).toBe('r***@example.com');
  });

  it("a notification carries its subscriber's own one-click unsubscribe, and no line break from a title reaches the subject", () => {
    const m = notificationMail(
      'r@example.com',
      { base: 'https://status.test', slug: 'shop' },
      'uptime.maintenance.scheduled',
      {
        maintenance: { title: 'DB upgrade\r\nBcc: x@example.com', message: 'Short downtime', startsAt: '2026-01-01T00:00:00Z', endsAt: '2026-01-01T01:00:00Z' },
      },
      'cxunsub_abc',
    );
    expect(m.to).toEqual(['r@example.com']);
    expect(m.subject).toBe('[shop status] Maintenance scheduled: DB upgrade Bcc: x@example.com');
    expect(m.headers).toEqual({
      'List-Unsubscribe': '<https://status.test/v1/status/shop/unsubscribe?token=cxunsub_abc>',
      'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
    });
    expect(m.text).toContain('Short downtime');
    expect(m.text).toContain('https://status.test/status/shop');
  });
});
