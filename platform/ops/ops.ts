import { createHash, timingSafeEqual } from 'node:crypto';
import { ROLE_BACKENDS, type Backend, type Role } from '../config.ts';
import type { Logger } from '../logger.ts';
import type { Platform } from '../platform.ts';
import { ERROR_CODES, UNAVAILABLE_RETRY_AFTER_SEC, type ErrorBody } from '../../schemas/error-codes.ts';
import { createServiceMetrics, type ServiceMetrics } from './metrics.ts';
import { CHECK_TIMEOUT_MS, createReadiness, type ReadinessOptions } from './readiness.ts';

/**
 * The operator's three routes, the same on every role's port (the edge's, the API's, and the small server of the
 * processor and the builder, ops-server.ts); each server only adapts these answers to its own framework:
 *
 *   GET /livez     200 while the event loop answers (no dependency is asked)
 *   GET /readyz    200 when every store and the bus the role uses answer (readiness.ts), else 503 naming them
 *   GET /metrics   the Prometheus text (metrics.ts), only with `Authorization: Bearer $METRICS_TOKEN`
 *
 * /metrics shares the public port, so it is closed by default: without METRICS_TOKEN set, or without the right
 * bearer token, it is answered exactly as a route that does not exist (404), so a scan learns nothing. The token is
 * compared in constant time (SHA-256 of both sides, then timingSafeEqual), so neither its bytes nor its length leak
 * through timing.
 */
export const OPS_PATHS = ['/livez', '/readyz', '/metrics'] as const;
export type OpsPath = (typeof OPS_PATHS)[number];

export interface OpsAnswer {
  status: number;
  headers: Array<[string, string]>;
  body: string;
}

export interface Ops {
  readonly metrics: ServiceMetrics;
  /**
   * Whether this caller gets `path`'s answer: /livez and /readyz always, /metrics only with the token. False: answer
   * as for a route that does not exist. Synchronous, so the edge decides before anything is awaited.
   */
  serves(path: string, authorization: string | undefined): path is OpsPath;
  answer(path: OpsPath): Promise<OpsAnswer>;
}

export interface OpsOptions {
  ports: Pick<Platform, 'db' | 'analytics' | 'bus' | 'limiter'>;
  /** The role's backends (platform/config.ts ROLE_BACKENDS): the ones readiness asks. */
  uses: readonly Backend[];
  logger: Logger;
  /** METRICS_TOKEN; unset: /metrics is closed. */
  metricsToken?: string;
  readiness?: ReadinessOptions;
}

/** The ops of a role started on `platform` (service/service.ts), with the bus's lag and the pool's use among its metrics. */
export function opsOfRole(platform: Platform, role: Role): Ops {
  const uses = ROLE_BACKENDS[role];
  const ops = createOps({ ports: platform, uses, logger: platform.logger, metricsToken: platform.config.METRICS_TOKEN });
  const { bus, db } = platform;
  if (uses.includes('bus') && bus.lag) ops.metrics.addBusLag(() => bus.lag!());
  if (uses.includes('relational') && db.poolUse) ops.metrics.addDbPool(() => db.poolUse!());
  ops.metrics.addDiskSpace(() => platform.disk.state());
  return ops;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest();

/** Whether `authorization` is `Bearer <token>` (the scheme in any case), compared in constant time. */
export function bearerMatches(authorization: string | undefined, token: string | undefined): boolean {
  if (!token || !authorization) return false;
  const given = /^bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization)?.[1];
  return given !== undefined && timingSafeEqual(sha256(given), sha256(token));
}

const JSON_HEADERS: Array<[string, string]> = [
  ['Content-Type', 'application/json'],
  ['Cache-Control', 'no-store'],
];

export function createOps(opts: OpsOptions): Ops {
  const metrics = createServiceMetrics();
  const log = opts.logger.child({ component: 'ops' });
  const readiness = createReadiness(opts.ports, opts.uses, log, opts.readiness);
  const timeoutMs = opts.readiness?.timeoutMs ?? CHECK_TIMEOUT_MS;
  const failure = (error: ErrorBody['error'], message: string, extra: Record<string, unknown> = {}) => JSON.stringify({ error, message, ...extra });

  async function metricsAnswer(): Promise<OpsAnswer> {
    try {
      return {
        status: 200,
        headers: [
          ['Content-Type', metrics.contentType],
          ['Cache-Control', 'no-store'],
        ],
        body: await metrics.render(),
      };
    } catch (err) {
      log.error({ err }, 'rendering the metrics failed');
      return { status: ERROR_CODES.internal, headers: JSON_HEADERS, body: failure('internal', 'the metrics could not be read') };
    }
  }

  async function readyAnswer(): Promise<OpsAnswer> {
    const { ready, checks } = await readiness.check();
    if (ready) return { status: 200, headers: JSON_HEADERS, body: JSON.stringify({ status: 'ready', checks }) };
    // Names what failed, never how (an address, a driver's message): the probe is public; the log has the details.
    const failed = Object.entries(checks)
      .filter(([, r]) => r !== 'ok')
      .map(([dep, r]) => (r === 'timeout' ? `${dep} did not answer within ${timeoutMs} ms` : `${dep} failed`));
    return {
      status: ERROR_CODES.unavailable,
      headers: [...JSON_HEADERS, ['Retry-After', String(UNAVAILABLE_RETRY_AFTER_SEC)]],
      body: failure('unavailable', `not ready: ${failed.join('; ')}`, { checks }),
    };
  }

  return {
    metrics,
    serves(path, authorization): path is OpsPath {
      if (path === '/livez' || path === '/readyz') return true;
      return path === '/metrics' && bearerMatches(authorization, opts.metricsToken);
    },
    answer(path) {
      if (path === '/livez') return Promise.resolve({ status: 200, headers: JSON_HEADERS, body: '{"status":"live"}' });
      if (path === '/readyz') return readyAnswer();
      return metricsAnswer();
    },
  };
}
