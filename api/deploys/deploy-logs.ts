import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AnalyticalStore } from '../../platform/ports/analytical-store.ts';
import type { Queryable } from '../../platform/ports/relational-store.ts';
import { FINISHED_DEPLOY_STATES, type DeployState } from '../../schemas/deploys.ts';
import { LIMITS } from '../../schemas/limits.ts';
import type { LogPage } from '../../schemas/api/deploys.ts';
import { deploysRepository as deploys } from './deploys-repository.ts';

/**
 * Reading a deploy's build log (written by the builder while it builds): a page at a time, as every client reads it
 * (the console, the share link), or followed live as Server-Sent Events until the build ends (for CLIs).
 */
const PAGE = LIMITS.deploys.logPageLines;
/** How often a followed log looks for new lines. */
const FOLLOW_POLL_MS = 300;

const finished = (status: string) => FINISHED_DEPLOY_STATES.includes(status as DeployState);

/** One page of a deploy's log from `from` on: the lines, where the next page starts, and whether there is no more to come. */
export async function logPage(analytics: AnalyticalStore, projectId: string, deployId: string, status: string, from: number): Promise<LogPage> {
  const lines = await deploys.logLines(analytics, projectId, deployId, from, PAGE);
  const nextSeq = lines.length ? lines[lines.length - 1]!.seq + 1 : from;
  return { status, lines, nextSeq, done: finished(status) && lines.length < PAGE };
}

/**
 * Follow a deploy's log as Server-Sent Events from `from` on: one `line` event per line, polling the log and the
 * deploy until it finished and every line was sent, then `end` with its final status. The reply is taken over.
 */
export async function followLog(
  stores: { db: Queryable; analytics: AnalyticalStore },
  request: FastifyRequest,
  reply: FastifyReply,
  deploy: { projectId: string; id: string },
  from: number,
): Promise<void> {
  reply.hijack();
  const out = reply.raw;
  out.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
  let closed = false;
  request.raw.on('close', () => (closed = true));
  let next = from;
  try {
    while (!closed) {
      const status = (await deploys.get(stores.db, deploy.projectId, deploy.id)).status;
      const lines = await deploys.logLines(stores.analytics, deploy.projectId, deploy.id, next, PAGE);
      for (const l of lines) out.write(`id: ${l.seq}\nevent: line\ndata: ${JSON.stringify(l)}\n\n`);
      if (lines.length) next = lines[lines.length - 1]!.seq + 1;
      if (finished(status) && lines.length < PAGE) {
        out.write(`event: end\ndata: ${JSON.stringify({ status })}\n\n`);
        break;
      }
      await new Promise((r) => setTimeout(r, FOLLOW_POLL_MS));
    }
  } catch (err) {
    // The stream has started: the failure can only end it (an `error` event says so).
    request.log.error({ err }, 'following a build log failed');
    out.write(`event: error\ndata: ${JSON.stringify({ error: 'internal', message: 'the log could not be read; reconnect with from=<next seq>' })}\n\n`);
  } finally {
    out.end();
  }
}
