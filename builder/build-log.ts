import type { AnalyticalStore } from '../platform/ports/analytical-store.ts';
import { scrubText } from '../domain/secret-scrub.ts';

/**
 * A build's log, written while the build runs: every stdout/stderr line with its time, in order, to
 * ClickHouse `deploy_logs` (keyed by deploy and sequence number, so a retried insert changes nothing).
 * Before a line is stored, the values of the project's secret build variables are masked (`***`, as CI
 * systems mask secrets; values shorter than MIN_MASKED_LENGTH are left alone, they would mask half the
 * log) and the error scrubber's patterns apply (domain/secret-scrub.ts), so a build that prints its
 * secrets does not publish them through a shared log. Past `maxLines`, one line says the log was cut and
 * the rest of the output is counted, not stored.
 */
export const MIN_MASKED_LENGTH = 4;
const FLUSH_MS = 200;
const FLUSH_LINES = 500;

export interface BuildLogOptions {
  analytics: AnalyticalStore;
  projectId: string;
  deployId: string;
  secrets: string[];
  now: () => number;
  maxLines: number;
  maxLineChars: number;
}

export interface BuildLog {
  /** A chunk of a stream's output; complete lines are logged, the rest waits for more. */
  write(stream: 'stdout' | 'stderr' | 'system', chunk: string): void;
  /** One whole line (the builder's own notes: checkout, timing, why it failed). */
  line(stream: 'stdout' | 'stderr' | 'system', text: string): void;
  /** Log what is left of each stream and write everything out. */
  close(): Promise<void>;
  /** Lines stored so far. */
  readonly stored: number;
  /** Characters held for unfinished lines (never more than maxLineChars + 1 per stream). */
  readonly held: number;
}

export function createBuildLog(o: BuildLogOptions): BuildLog {
  const secrets = [...new Set(o.secrets.filter((s) => s.length >= MIN_MASKED_LENGTH))].sort((a, b) => b.length - a.length);
  const carry: Record<string, string> = {};
  const skipping: Record<string, boolean> = {};
  let pending: Array<{ project_id: string; deploy_id: string; seq: number; at: string; stream: string; line: string }> = [];
  let seq = 0;
  let timer: NodeJS.Timeout | undefined;
  let writing: Promise<void> = Promise.resolve();
  let failed: unknown;

  const mask = (text: string) => {
    let out = text;
    for (const s of secrets) if (out.includes(s)) out = out.split(s).join('***');
    return scrubText(out);
  };

  function line(stream: string, text: string): void {
    if (seq >= o.maxLines) return;
    const cut = text.length > o.maxLineChars ? `${text.slice(0, o.maxLineChars)} [line cut at ${o.maxLineChars} characters]` : text;
    const last = seq === o.maxLines - 1;
    pending.push({
      project_id: o.projectId,
      deploy_id: o.deployId,
      seq: seq++,
      at: new Date(o.now()).toISOString().replace('T', ' ').replace('Z', ''),
      stream: last ? 'system' : stream,
      line: last ? `[log cut at ${o.maxLines} lines: the rest of this build's output is not stored]` : mask(cut.replace(/\r$/, '')),
    });
    if (pending.length >= FLUSH_LINES) flush();
    else timer ??= setTimeout(flush, FLUSH_MS);
  }

  function flush(): void {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (!pending.length) return;
    const rows = pending;
    pending = [];
    writing = writing.then(() =>
      o.analytics.insert('deploy_logs', rows, { dedupToken: `dlog-${o.deployId}-${rows[0]!.seq}-${rows.length}` }).catch((err) => {
        failed ??= err;
      }),
    );
  }

  return {
    // A line is cut at its cap as it streams: once an unfinished line passes maxLineChars it is logged (cut) and the
    // rest of it, up to the next newline, is dropped unread, so a 30 MB line without a newline costs one pass.
    write(stream, chunk) {
      let pos = 0;
      while (pos < chunk.length) {
        const nl = chunk.indexOf('\n', pos);
        const end = nl === -1 ? chunk.length : nl;
        if (skipping[stream]) {
          if (nl === -1) return;
          skipping[stream] = false;
        } else {
          const held = carry[stream] ?? '';
          const room = o.maxLineChars + 1 - held.length;
          if (end - pos > room) {
            line(stream, held + chunk.slice(pos, pos + room));
            carry[stream] = '';
            skipping[stream] = nl === -1;
          } else if (nl !== -1) {
            line(stream, held + chunk.slice(pos, end));
            carry[stream] = '';
          } else carry[stream] = held + chunk.slice(pos, end);
        }
        pos = end + 1;
      }
    },
    line,
    async close() {
      for (const [stream, rest] of Object.entries(carry)) if (rest) line(stream, rest);
      for (const k of Object.keys(carry)) delete carry[k];
      flush();
      await writing;
      if (failed) throw failed;
    },
    get stored() {
      return seq;
    },
    get held() {
      return Object.values(carry).reduce((n, c) => n + c.length, 0);
    },
  };
}
