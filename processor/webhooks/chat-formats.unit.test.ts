import { describe, expect, it } from 'vitest';
import { cut, discordMessage, slackMessage } from './chat-formats.ts';
import { DiscordMessage, SlackMessage } from './chat-formats.test-shapes.ts';

/** Seeded, so a failure repeats. */
function prng(seed: number) {
  return () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x7fffffff;
  };
}
const ALPHABET = ['a', ' ', '<', '>', '&', '*', '`', '\n', '😀', 'é', '\u0000', '"'];
function text(rand: () => number, max: number): string {
  const n = Math.floor(rand() * max);
  let s = '';
  for (let i = 0; i < n; i++) s += ALPHABET[Math.floor(rand() * ALPHABET.length)];
  return s;
}

describe('chat formats: hostile issue data stays within Slack and Discord limits', () => {
  it('renders 300 random issue events and other events within the documented shapes', () => {
    const rand = prng(41);
    for (let i = 0; i < 300; i++) {
      const issueEvent = i % 3 !== 2;
      const data = issueEvent
        ? {
            issue: { id: `grp_${i}`, title: text(rand, 20_000), culprit: rand() < 0.3 ? null : text(rand, 5_000), count: i },
            environment: rand() < 0.5 ? null : text(rand, 3_000),
            deploy: rand() < 0.5 ? null : { id: text(rand, 3_000) },
            project: { slug: 's', name: text(rand, 3_000) },
            url: 'https://console.example/projects/s/errors/grp_1',
          }
        : { nested: Array.from({ length: 50 }, () => text(rand, 400)) };
      const input = {
        event: issueEvent ? ['issue.created', 'issue.regressed', 'issue.resolved'][i % 3]! : 'deploy.succeeded',
        data,
        sentAt: new Date(0).toISOString(),
      };
      const slack = SlackMessage.safeParse(slackMessage(input));
      expect(slack.success, JSON.stringify(slack.error?.issues?.[0])).toBe(true);
      const discord = DiscordMessage.safeParse(discordMessage(input));
      expect(discord.success, JSON.stringify(discord.error?.issues?.[0])).toBe(true);
    }
  });

  it('cut never splits a surrogate pair and marks the cut', () => {
    expect(cut('😀😀😀', 4)).toBe('😀…');
    expect(cut('ab😀', 3)).toBe('ab…');
    expect(cut('short', 10)).toBe('short');
  });
});
