/**
 * Operators' command for error events set aside as unprocessable (processor/errors/poison-isolation.ts):
 *
 *   npm run unprocessable -- list [eventId ...]     the kept events (scrubbed), as JSON lines
 *   npm run unprocessable -- replay [eventId ...]   publish them again on the error topic (all, or these)
 *
 * Configured from the environment like the service (service/main.ts). On the embedded defaults (PGlite)
 * the data directory has one owner at a time (its lock): stop `npm start` first, or this command is refused.
 */
import { loadConfig } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { createPlatform } from '../platform/platform.ts';
import { dataDirRefusal } from '../platform/data-dir/data-dir-refusal.ts';
import { listUnprocessable, replayUnprocessable } from '../processor/errors/unprocessable-replay.ts';

async function main(): Promise<void> {
  const [command, ...eventIds] = process.argv.slice(2);
  if (command !== 'list' && command !== 'replay') {
    process.stderr.write('usage: npm run unprocessable -- list|replay [eventId ...]\n');
    process.exit(2);
  }
  const config = loadConfig();
  const platform = await createPlatform(
    config,
    createLogger('warn', 'unprocessable'),
    {},
    {
      backends: ['relational', 'bus'],
      command: `npm run unprocessable -- ${command}`,
    },
  );
  try {
    const ids = eventIds.length ? eventIds : undefined;
    if (command === 'list') {
      for (const e of await listUnprocessable(platform, { eventIds: ids })) {
        process.stdout.write(JSON.stringify({ ...e, message: JSON.parse(e.message.toString()) }) + '\n');
      }
    } else {
      process.stdout.write(JSON.stringify(await replayUnprocessable(platform, { eventIds: ids })) + '\n');
    }
  } finally {
    await platform.close();
  }
}

main().catch((err) => {
  const refusal = dataDirRefusal(err);
  if (refusal) {
    process.stderr.write(`${refusal.message}\n`);
    process.exit(refusal.exitCode);
  }
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
