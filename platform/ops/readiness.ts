import type { Backend } from '../config.ts';
import type { Logger } from '../logger.ts';
import type { Platform } from '../platform.ts';

/**
 * Whether a role can do its work now: each store and the bus the role uses answers a cheap question within
 * CHECK_TIMEOUT_MS. `/readyz` answers from this; `/livez` asks nothing of anyone (the event loop answering is the
 * whole question), so a database outage makes a role unready, never "dead" (an orchestrator would restart it for
 * nothing).
 *
 * The questions: `SELECT 1` to Postgres (or PGlite) and to ClickHouse (or chDB); the bus's ping (Kafka: the
 * cluster's metadata; the in-process bus has nothing to reach); one hit the rate limiter counts against a key of
 * its own (Redis: the same script call the edge makes per request). Mail is left out: an SMTP relay being away
 * delays alert mail, which is retried, and stops nothing else.
 *
 * The probe is public (it shares the role's port), so answers are shared: concurrent probes wait on one round of
 * questions, and its answer is kept CACHE_MS; a flood of probes asks the backends at most once per CACHE_MS.
 */
export const CHECK_TIMEOUT_MS = 2_000;
const CACHE_MS = 1_000;

export type Dependency = Exclude<Backend, 'mail'>;
export type CheckResult = 'ok' | 'failed' | 'timeout';

export interface ReadinessReport {
  ready: boolean;
  checks: Partial<Record<Dependency, CheckResult>>;
}

export interface Readiness {
  check(): Promise<ReadinessReport>;
}

export interface ReadinessOptions {
  timeoutMs?: number;
  cacheMs?: number;
  now?: () => number;
}

type Ports = Pick<Platform, 'db' | 'analytics' | 'bus' | 'limiter'>;

const QUESTIONS: Record<Dependency, (p: Ports) => Promise<unknown>> = {
  relational: (p) => p.db.query('SELECT 1'),
  analytical: (p) => p.analytics.query('SELECT 1'),
  bus: (p) => p.bus.ping?.() ?? Promise.resolve(),
  rateLimits: (p) => p.limiter.hitAll([{ key: 'service:readyz', limit: Number.MAX_SAFE_INTEGER, windowMs: 60_000 }]),
};

/** `uses`: the role's backends (platform/config.ts ROLE_BACKENDS); only those are asked. */
export function createReadiness(ports: Ports, uses: readonly Backend[], log: Logger, opts: ReadinessOptions = {}): Readiness {
  const deps = uses.filter((b): b is Dependency => b !== 'mail');
  const timeoutMs = opts.timeoutMs ?? CHECK_TIMEOUT_MS;
  const cacheMs = opts.cacheMs ?? CACHE_MS;
  const now = opts.now ?? Date.now;
  let last: { at: number; report: ReadinessReport } | undefined;
  let running: Promise<ReadinessReport> | undefined;
  let wasReady = true;

  async function ask(dep: Dependency): Promise<CheckResult> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), timeoutMs);
    });
    try {
      const answer = await Promise.race([
        Promise.resolve()
          .then(() => QUESTIONS[dep](ports))
          .then(
            () => 'ok' as const,
            (err: unknown) => {
              log.warn({ err, dependency: dep }, 'readiness: a dependency did not answer');
              return 'failed' as const;
            },
          ),
        timeout,
      ]);
      if (answer === 'timeout') log.warn({ dependency: dep, timeoutMs }, 'readiness: a dependency did not answer in time');
      return answer;
    } finally {
      clearTimeout(timer);
    }
  }

  async function round(): Promise<ReadinessReport> {
    const results = await Promise.all(deps.map(async (d) => [d, await ask(d)] as const));
    const report: ReadinessReport = { ready: results.every(([, r]) => r === 'ok'), checks: Object.fromEntries(results) };
    if (report.ready !== wasReady) {
      if (report.ready) log.info({ checks: report.checks }, 'ready again: every dependency answers');
      else log.error({ checks: report.checks }, 'not ready: a dependency does not answer');
      wasReady = report.ready;
    }
    last = { at: now(), report };
    return report;
  }

  return {
    check() {
      if (last && now() - last.at < cacheMs) return Promise.resolve(last.report);
      running ??= round().finally(() => {
        running = undefined;
      });
      return running;
    },
  };
}
