import { z } from 'zod';

/**
 * The documented message shapes of Slack incoming webhooks (Block Kit) and Discord's Execute Webhook, with their
 * limits, for the tests of chat-formats.ts.
 */
/** Slack incoming webhook message (Block Kit): top-level text up to 40,000 characters; section text up to 3,000. */
const SlackText = z.object({ type: z.enum(['mrkdwn', 'plain_text']), text: z.string().min(1).max(3000) });
export const SlackMessage = z
  .object({
    text: z.string().min(1).max(40_000),
    blocks: z
      .array(
        z.discriminatedUnion('type', [
          z
            .object({
              type: z.literal('section'),
              text: SlackText.optional(),
              fields: z
                .array(SlackText.extend({ text: z.string().max(2000) }))
                .max(10)
                .optional(),
            })
            .strict(),
          z.object({ type: z.literal('context'), elements: z.array(SlackText).min(1).max(10) }).strict(),
          z.object({ type: z.literal('actions'), elements: z.array(z.record(z.string(), z.unknown())).max(25) }),
        ]),
      )
      .min(1)
      .max(50),
  })
  .strict();

/** Discord Execute Webhook: content up to 2,000; an embed's title 256, description 4,096, 25 fields (256 / 1,024), 6,000 in all. */
export const DiscordMessage = z
  .object({
    content: z.string().max(2000),
    embeds: z
      .array(
        z
          .object({
            title: z.string().max(256),
            url: z.string().url().optional(),
            description: z.string().max(4096),
            color: z.number().int().min(0).max(0xffffff),
            fields: z
              .array(z.object({ name: z.string().min(1).max(256), value: z.string().min(1).max(1024), inline: z.boolean().optional() }).strict())
              .max(25),
            timestamp: z.string().datetime(),
          })
          .strict()
          .refine((e) => e.title.length + e.description.length + e.fields.reduce((n, f) => n + f.name.length + f.value.length, 0) <= 6000),
      )
      .max(10),
  })
  .strict();
