import { describe, expect, it } from 'vitest';
import { scrubFeedback } from './scrub-step.ts';

const base = { id: 'f1', source: 'feedback' as const, message: 'hi', timestamp: 0 };

describe('feedback scrub step', () => {
  it('drops a blank message', () => {
    expect(scrubFeedback({ ...base, message: ' \n\t ' })).toEqual({ kind: 'drop', reason: 'feedback_empty_message' });
  });

  it('filters secrets in message, name, e-mail and URL; keeps what holds none', () => {
    const out = scrubFeedback({
      ...base,
      message: 'sending Bearer abcdef123456 broke it',
      name: 'Bob',
      email: 'bob@example.com',
      url: 'https://app.example.com/?token=abc123',
      eventId: 'e1',
    });
    expect(out).toEqual({
      kind: 'ok',
      value: {
        ...base,
        message: 'sending Bearer [Filtered] broke it',
        name: 'Bob',
        email: 'bob@example.com',
        url: 'https://app.example.com/?token=[Filtered]',
        eventId: 'e1',
      },
    });
    const secretEmail = scrubFeedback({ ...base, email: 'sk_live_abcdefghijklmnop' });
    expect(secretEmail.kind === 'ok' && secretEmail.value.email).toBe('[Filtered]');
  });
});
