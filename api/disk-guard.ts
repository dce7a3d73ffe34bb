import type { FastifyInstance } from 'fastify';
import { DISK_FULL_MESSAGE, type DiskSpace } from '../platform/data-dir/disk-space.ts';
import { DISK_FULL_RETRY_AFTER_SEC, ServiceError } from '../schemas/error-codes.ts';
import { ROUTES } from '../schemas/api/route-table.ts';

/**
 * While DATA_DIR's disk is low (platform/data-dir/disk-space.ts) the API stays readable and takes no writes: every
 * request but GET, HEAD and OPTIONS answers 503 `unavailable` with Retry-After, after its credential and its input were
 * checked (a bad request is still told what is wrong), before its handler asks a store or the bus for anything.
 * Signing in and out stay open so people can reach the console and read: each writes one small row, which the
 * threshold keeps room for. Everything is taken again as soon as the watch finds room; nothing restarts.
 */
const READS = new Set(['GET', 'HEAD', 'OPTIONS']);
const OPEN_WHILE_LOW = new Set<string>([ROUTES.signIn.path, ROUTES.signOut.path]);

export function installDiskGuard(app: FastifyInstance, disk: Pick<DiskSpace, 'low'>): void {
  app.addHook('preHandler', async (request) => {
    if (!disk.low || READS.has(request.method) || request.is404 || OPEN_WHILE_LOW.has(request.routeOptions.url ?? '')) return;
    throw new ServiceError('unavailable', DISK_FULL_MESSAGE, { retryAfterSec: DISK_FULL_RETRY_AFTER_SEC });
  });
}
