/**
 * One service role in a process of its own, for the crash test and the pipeline bench:
 * `node --import tsx test/e2e/support/role-process.ts <role> '<StartOptions.testing as JSON>'`,
 * configured from the environment like service/main.ts. Prints one JSON line `{"ready":true,"port":n}`
 * once started; SIGTERM stops it gracefully, SIGKILL is the crash.
 */
import { loadConfig, type Role } from '../../../platform/config.ts';
import { createLogger } from '../../../platform/logger.ts';
import { start } from '../../../service/service.ts';

const role = (process.argv[2] ?? 'all') as Role;
const testing = JSON.parse(process.argv[3] ?? '{}');
const config = loadConfig();
const running = await start(role, config, createLogger(config.LOG_LEVEL, role), { testing });
process.stdout.write(`${JSON.stringify({ ready: true, port: running.port, pid: process.pid })}\n`);
process.on('SIGTERM', () => {
  void running.stop().then(() => process.exit(0));
});
