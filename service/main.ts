/** Command line entry: `tsx service/main.ts [all|ingest|processor|api]`. */
import { ConfigError, loadConfig, type Config, type Role } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { checkRoleConfig, ROLES, start } from './service.ts';
import { dataDirRefusal } from '../platform/data-dir/data-dir-refusal.ts';

async function main(): Promise<void> {
  const role = (process.argv[2] ?? 'all') as Role;
  if (!ROLES.includes(role)) {
    process.stderr.write(`unknown role "${role}"; use one of ${ROLES.join(', ')}\n`);
    process.exit(2);
  }
  let config: Config;
  try {
    config = loadConfig();
    checkRoleConfig(role, config);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(78);
    }
    throw err;
  }
  const logger = createLogger(config.LOG_LEVEL, role === 'all' ? 'service' : role);
  // A bug in one role (a throw from a timer, a promise nobody awaited) is logged and the process keeps serving:
  // in the single process every other role lives here too. What still ends the process is in the README
  // ("What ends the process").
  process.on('unhandledRejection', (err) => logger.error({ err }, 'unhandled rejection (a bug); still serving'));
  process.on('uncaughtException', (err) => logger.error({ err }, 'uncaught exception (a bug); still serving'));
  const running = await start(role, config, logger);
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    await running.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
}

main().catch((err) => {
  // A data directory in use or that cannot be opened is the operator's to act on: the message says what and how.
  const refusal = dataDirRefusal(err);
  if (refusal) {
    process.stderr.write(`failed to start: ${refusal.message}\n`);
    process.exit(refusal.exitCode);
  }
  process.stderr.write(`failed to start: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
