import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { checkHookSignature } from './hook-signature.ts';

describe('deploy hook signature (§5.2 rule 7)', () => {
  it('matches GitHub\'s published test vector (secret "It\'s a Secret to Everybody", payload "Hello, World!")', () => {
    // https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries#testing-the-webhook-payload-validation
    const signature = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';
    expect(checkHookSignature(Buffer.from('Hello, World!'), "It's a Secret to Everybody", { 'x-hub-signature-256': signature })).toBe('valid');
    expect(checkHookSignature(Buffer.from('Hello, World?'), "It's a Secret to Everybody", { 'x-hub-signature-256': signature })).toBe('invalid');
  });

  it('accepts X-Service-Signature too, refuses a wrong key or a malformed header, and is absent without a header', () => {
    const body = Buffer.from('{"ref":"refs/heads/main"}');
    const mac = createHmac('sha256', 'cxhook_token').update(body).digest('hex');
    expect(checkHookSignature(body, 'cxhook_token', { 'x-service-signature': `sha256=${mac}` })).toBe('valid');
    expect(checkHookSignature(body, 'cxhook_token', { 'x-service-signature': mac })).toBe('valid');
    expect(checkHookSignature(body, 'cxhook_other', { 'x-service-signature': mac })).toBe('invalid');
    expect(checkHookSignature(body, 'cxhook_token', { 'x-hub-signature-256': 'sha256=zz' })).toBe('invalid');
    expect(checkHookSignature(body, 'cxhook_token', {})).toBe('absent');
  });

  it('with both headers, both must match (a valid one does not carry a forged one)', () => {
    const body = Buffer.from('{"ref":"refs/heads/main"}');
    const mac = createHmac('sha256', 'cxhook_token').update(body).digest('hex');
    const forged = 'f'.repeat(64);
    expect(checkHookSignature(body, 'cxhook_token', { 'x-hub-signature-256': `sha256=${mac}`, 'x-service-signature': mac })).toBe('valid');
    expect(checkHookSignature(body, 'cxhook_token', { 'x-hub-signature-256': `sha256=${mac}`, 'x-service-signature': forged })).toBe('invalid');
    expect(checkHookSignature(body, 'cxhook_token', { 'x-hub-signature-256': `sha256=${forged}`, 'x-service-signature': mac })).toBe('invalid');
  });
});
