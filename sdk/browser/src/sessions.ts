import { post, randomId, safe, type Transport } from './transport.ts';
import { SESSIONS_ROUTE, type SessionUpdate } from './wire.ts';

/**
 * Release health (issue 40), with `sessions: true`: one session per page load, posted to `sessions/i` as
 *  1. `init` (status ok) when the client starts;
 *  2. an update when its status changes: `errored` at the first error reported by hand, `crashed` at the first
 *     unhandled one (window error, unhandled rejection), which no later error changes back;
 *  3. a terminal update on pagehide (`exited` when nothing went wrong, else its status, with the error count and the
 *     duration in seconds), sent once, with `keepalive`.
 * `did` is the visitor's id when there is one (crash-free users). Returns the errors client's note of an error.
 */
export function startSession(t: Transport, did?: string): (crashed?: boolean) => void {
  const started = Date.now();
  const s: SessionUpdate = { sid: randomId(), did, init: true, status: 'ok', errors: 0, started, timestamp: started };
  const send = () => {
    s.timestamp = Date.now();
    post(t, SESSIONS_ROUTE, JSON.stringify({ sessions: [s] }), true).catch(() => undefined);
    s.init = false;
  };
  send();
  addEventListener(
    'pagehide',
    safe(() => {
      if (s.status === 'ok') s.status = 'exited';
      s.duration = (Date.now() - started) / 1000;
      send();
    }),
    { once: true },
  );
  return (crashed) => {
    s.errors++;
    const status = crashed ? 'crashed' : s.status === 'ok' ? 'errored' : s.status;
    if (status !== s.status) {
      s.status = status;
      send();
    }
  };
}
