import { type CommitState, commentMarker } from '../../../schemas/github-status.ts';
import type { PreviewIssue } from '../repositories/github-status-repository.ts';

/**
 * What GitHub should show of a deploy now (pure): its commit status, and its pull request's comment. The sweep compares
 * them with what it told GitHub last and sends only the difference.
 */
export interface DeployView {
  projectId: string;
  slug: string;
  deployId: string;
  headSha: string;
  status: string;
  environment: 'production' | 'preview';
  failureReason: string | null;
  /** The deploy's own address (its preview URL). */
  deployUrl: string;
  /** The deploy's page in the console. */
  consoleUrl: string;
  /** The console's address of an issue. */
  issueUrl(issueId: string): string;
  /** Issues first seen in this deploy and never in production. */
  previewIssues: { total: number; issues: PreviewIssue[] };
  sessions: { started: number; crashed: number };
  /** The project's github.failOnNewErrors. */
  failOnNewErrors: boolean;
}

export interface DesiredStatus {
  state: CommitState;
  description: string;
  targetUrl: string;
}

/** The commit status for a deploy's state; undefined while it is queued (pending is set when its build starts). */
export function desiredStatus(v: DeployView): DesiredStatus | undefined {
  const what = v.environment === 'preview' ? 'preview' : 'production deploy';
  switch (v.status) {
    case 'building':
      return { state: 'pending', description: v.environment === 'preview' ? 'Building preview' : 'Building production deploy', targetUrl: v.consoleUrl };
    case 'ready': {
      const n = v.previewIssues.total;
      if (v.environment === 'preview' && v.failOnNewErrors && n > 0)
        return { state: 'failure', description: `Preview ready, but it introduced ${n} new ${n === 1 ? 'error' : 'errors'}`, targetUrl: v.consoleUrl };
      return { state: 'success', description: `${v.environment === 'preview' ? 'Preview' : 'Production deploy'} ready`, targetUrl: v.deployUrl };
    }
    case 'failed':
      return { state: 'failure', description: `The ${what} failed${v.failureReason ? ` (${v.failureReason})` : ''}`, targetUrl: v.consoleUrl };
    case 'canceled':
      return { state: 'error', description: `The ${what} was canceled`, targetUrl: v.consoleUrl };
    default:
      return undefined;
  }
}

/** Issues listed in a comment, at most; the rest are counted. */
export const COMMENT_ISSUES = 10;
const TEXT_MAX = 120;

/**
 * A tenant's text (an error's name and message come from whoever sends events) made inert in markdown: one line, cut,
 * every character markdown or HTML gives meaning to escaped, so it can neither link, format, nor close the marker.
 */
export function inertText(s: string, max = TEXT_MAX): string {
  const line = s.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  const cut = line.length > max ? `${line.slice(0, max - 1)}…` : line;
  return cut.replace(/[\\`*_{}[\]()#+\-.!|<>~&@:]/g, (c) => `\\${c}`);
}

/** The pull request's comment: the marker first, then the deploy, its issues seen only here and its crash-free sessions. */
export function commentBody(v: DeployView): string {
  const state =
    v.status === 'ready'
      ? 'Ready'
      : v.status === 'failed'
        ? `Failed${v.failureReason ? ` (${v.failureReason})` : ''}`
        : v.status === 'building'
          ? 'Building'
          : v.status === 'canceled'
            ? 'Canceled'
            : 'Queued';
  const lines = [
    commentMarker(v.projectId),
    `**${inertText(v.slug)}**: ${v.environment === 'preview' ? 'preview' : 'production deploy'} of \`${v.headSha.slice(0, 7)}\``,
    '',
    '| | |',
    '| --- | --- |',
    `| Status | ${state} |`,
    v.status === 'ready' ? `| ${v.environment === 'preview' ? 'Preview' : 'Deploy'} | ${v.deployUrl} |` : undefined,
    `| Deploy | [${v.deployId}](${v.consoleUrl}) |`,
  ];
  const { started, crashed } = v.sessions;
  if (started > 0) {
    const pct = Math.floor(Math.max(0, Math.min(1, 1 - crashed / started)) * 10_000) / 100;
    lines.push(`| Crash-free sessions | ${pct}% of ${started} |`);
  }
  const { total, issues } = v.previewIssues;
  if (v.status === 'ready' || total > 0) {
    lines.push(
      '',
      total ? `**Issues seen only on this ${v.environment === 'preview' ? 'preview' : 'deploy'}: ${total}**` : 'No new issues seen on this deploy.',
    );
    for (const i of issues.slice(0, COMMENT_ISSUES)) lines.push(`- [${inertText(i.name, 60)}: ${inertText(i.message)}](${v.issueUrl(i.id)})`);
    if (total > Math.min(issues.length, COMMENT_ISSUES)) lines.push(`- and ${total - Math.min(issues.length, COMMENT_ISSUES)} more`);
  }
  return lines.filter((l) => l !== undefined).join('\n');
}
