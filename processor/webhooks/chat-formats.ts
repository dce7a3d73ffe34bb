/**
 * The message shapes of chat incoming webhooks (issue 41), for endpoints whose format is `slack` or `discord`:
 * the same project event, rendered as that service's message instead of our signed JSON.
 *
 * - Slack (Block Kit, incoming webhooks): `{ text, blocks }`: `text` is the notification's fallback (at most 40,000
 *   characters; we keep it far shorter), `blocks` a `section` of mrkdwn text (at most 3,000 characters), a `section`
 *   of `fields` (at most 10, 2,000 characters each) and a `context` element naming the event with the console link.
 * - Discord (Execute Webhook): `{ content, embeds: [{ title, url, description, color, fields, timestamp }] }`: content
 *   at most 2,000 characters, an embed's title 256, description 4,096, at most 25 fields of name 256 / value 1,024,
 *   and 6,000 characters over the whole embed.
 * Every piece is cut to its limit here: a message over a limit is refused by the service (HTTP 400) and would only
 * burn the delivery's attempts.
 */

export interface ChatMessageInput {
  event: string;
  data: Record<string, unknown>;
  sentAt: string;
}

interface Rendered {
  title: string;
  url: string | undefined;
  summary: string;
  fields: Array<{ name: string; value: string }>;
  color: number;
}

export const SLACK_LIMITS = { text: 40_000, sectionText: 3_000, fields: 10, fieldText: 2_000, contextText: 3_000, blocks: 50 } as const;
export const DISCORD_LIMITS = { content: 2_000, title: 256, description: 4_096, fields: 25, fieldName: 256, fieldValue: 1_024, total: 6_000 } as const;

/** Red for new and regressed issues, green for resolved ones, grey for everything else. */
const COLORS: Record<string, number> = {
  'issue.created': 0xe5484d,
  'issue.regressed': 0xf76b15,
  'issue.resolved': 0x30a46c,
  'issue.escalating': 0xffb224,
  'issue.alert': 0xe5484d,
};

export function slackMessage(input: ChatMessageInput): { text: string; blocks: unknown[] } {
  const r = render(input);
  const link = r.url ? ` <${r.url}|Open in the console>` : '';
  const text = cut(`${r.title}${r.url ? ` (${r.url})` : ''}`, 500);
  const blocks: unknown[] = [
    { type: 'section', text: { type: 'mrkdwn', text: cut(`*${escapeSlack(r.title)}*\n${escapeSlack(r.summary)}`, SLACK_LIMITS.sectionText) } },
  ];
  if (r.fields.length)
    blocks.push({
      type: 'section',
      fields: r.fields
        .slice(0, SLACK_LIMITS.fields)
        .map((f) => ({ type: 'mrkdwn', text: cut(`*${escapeSlack(f.name)}*\n${escapeSlack(f.value)}`, SLACK_LIMITS.fieldText) })),
    });
  blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: cut(`\`${input.event}\` at ${input.sentAt}.${link}`, SLACK_LIMITS.contextText) }] });
  return { text, blocks };
}

export function discordMessage(input: ChatMessageInput): {
  content: string;
  embeds: Array<{
    title: string;
    url?: string;
    description: string;
    color: number;
    fields: Array<{ name: string; value: string; inline: boolean }>;
    timestamp: string;
  }>;
} {
  const r = render(input);
  const title = cut(r.title, DISCORD_LIMITS.title);
  const description = cut(r.summary || '\u200b', DISCORD_LIMITS.description - 1_000);
  // Fields share what the 6,000-character embed budget leaves after the title and the description.
  let budget = DISCORD_LIMITS.total - title.length - description.length;
  const fields: Array<{ name: string; value: string; inline: boolean }> = [];
  for (const f of r.fields.slice(0, DISCORD_LIMITS.fields)) {
    const name = cut(f.name, DISCORD_LIMITS.fieldName);
    const value = cut(f.value || '\u200b', Math.min(DISCORD_LIMITS.fieldValue, budget - name.length));
    if (budget - name.length - value.length < 0 || !value) break;
    budget -= name.length + value.length;
    fields.push({ name, value, inline: f.value.length <= 40 });
  }
  return {
    content: cut(`**${input.event}**: ${r.title}`, DISCORD_LIMITS.content),
    embeds: [{ title, ...(r.url ? { url: r.url } : {}), description, color: COLORS[input.event] ?? 0x8b8d98, fields, timestamp: input.sentAt }],
  };
}

/** What both formats show: issue events get their own layout, any other event its name and a JSON excerpt of its data. */
function render({ event, data }: ChatMessageInput): Rendered {
  const color = COLORS[event] ?? 0x8b8d98;
  if (event.startsWith('issue.')) {
    const issue = (data.issue ?? {}) as Record<string, unknown>;
    const project = (data.project ?? {}) as Record<string, unknown>;
    const deploy = data.deploy as Record<string, unknown> | null | undefined;
    const what =
      {
        'issue.created': 'New issue',
        'issue.regressed': 'Regression',
        'issue.resolved': 'Resolved',
        'issue.escalating': 'Escalating',
        'issue.alert': `Alert${alertRuleName(data)}`,
      }[event] ?? event;
    const fields = [
      { name: 'Project', value: String(project.name ?? project.slug ?? '') },
      { name: 'Environment', value: String(data.environment ?? 'unknown') },
      { name: 'Events', value: String(issue.count ?? 0) },
      { name: 'Culprit', value: String(issue.culprit ?? 'none found in the stack') },
    ];
    if (deploy?.id) fields.push({ name: 'Deploy', value: `${String(deploy.id)}${deploy.gitSha ? ` (${String(deploy.gitSha).slice(0, 7)})` : ''}` });
    return { title: `${what}: ${String(issue.title ?? '')}`, url: typeof data.url === 'string' ? data.url : undefined, summary: '', fields, color };
  }
  const summary = '```\n' + cut(JSON.stringify(data, null, 2), 1_500) + '\n```';
  return { title: event, url: typeof data.url === 'string' ? data.url : undefined, summary, fields: [], color };
}

/** issue.alert (issue 41): `: <rule name>` from its data's `alert.rule.name`, when there. */
function alertRuleName(data: Record<string, unknown>): string {
  const name = ((data.alert as { rule?: { name?: unknown } } | undefined)?.rule?.name ?? '') as unknown;
  return typeof name === 'string' && name ? ` (${name})` : '';
}

/** Slack's mrkdwn control characters (&, <, >) escaped, as its formatting guide asks. */
function escapeSlack(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** At most `n` characters (UTF-16 units, never splitting a surrogate pair), an ellipsis marking a cut. */
export function cut(s: string, n: number): string {
  if (n <= 0) return '';
  if (s.length <= n) return s;
  let end = n - 1;
  if (end > 0 && /[\uD800-\uDBFF]/.test(s[end - 1]!)) end--;
  return `${s.slice(0, end)}…`;
}
