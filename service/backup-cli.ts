/**
 * Operators' commands for the embedded data directory (README: Operating it, Backups and restore):
 *
 *   npm run backup -- <file>     a consistent copy of DATA_DIR in one file, whether the service runs or not
 *   npm run restore -- <file>    that copy back into an empty DATA_DIR
 *
 * DATA_DIR comes from the environment like the service's. What they do is in platform/data-dir/backup.ts and
 * restore.ts; these print it.
 */
import { ConfigError, loadConfig } from '../platform/config.ts';
import { backupDataDir, BackupRefusedError } from '../platform/data-dir/backup.ts';
import type { BackupManifest } from '../platform/data-dir/backup-manifest.ts';
import { dataDirRefusal } from '../platform/data-dir/data-dir-refusal.ts';
import { restoreDataDir, RestoreRefusedError } from '../platform/data-dir/restore.ts';

const USAGE = 'usage: npm run backup -- <file>   |   npm run restore -- <file>\n';

async function main(): Promise<void> {
  const [command, file, ...rest] = process.argv.slice(2);
  if ((command !== 'backup' && command !== 'restore') || !file || rest.length) {
    process.stderr.write(USAGE);
    process.exit(2);
  }
  const { DATA_DIR } = loadConfig();
  if (command === 'backup') {
    const done = await backupDataDir(DATA_DIR, file);
    process.stdout.write(`backup of ${done.manifest.source.dataDir} written to ${done.file} (${size(done.archiveBytes)})\n`);
    const m = done.manifest.source;
    process.stdout.write(m.serviceRunning ? `copied by the service that holds it: ${m.holder}\n` : 'copied with the service stopped\n');
    process.stdout.write(describe(done.manifest));
  } else {
    const done = await restoreDataDir(file, DATA_DIR);
    process.stdout.write(`restored ${file} into ${done.dir}\n`);
    process.stdout.write(describe(done.manifest));
    process.stdout.write(`start the service on it: DATA_DIR=${done.dir} npm start\n`);
  }
}

function describe(m: BackupManifest): string {
  const rows = m.parts.map((p) => `  ${p.name.padEnd(14)} ${String(p.files).padStart(8)} files ${size(p.bytes).padStart(10)}   ${p.how}`);
  const by = [m.service.version && `service ${m.service.version}`, m.service.commit && `commit ${m.service.commit.slice(0, 12)}`].filter(Boolean);
  return `${rows.join('\n')}\ntaken ${m.createdAt} on ${m.source.host}${by.length ? ` by ${by.join(', ')}` : ''} (backup format ${m.formatVersion})\n`;
}

function size(bytes: number): string {
  const units = ['bytes', 'KB', 'MB', 'GB', 'TB'];
  let v = bytes;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${v} bytes` : `${v.toFixed(1)} ${units[u]}`;
}

// A command that ran out of work without finishing (a promise nothing settles) must not look like a success to cron.
let finished = false;
process.on('beforeExit', () => {
  if (finished) return;
  process.stderr.write(`${process.argv[2]} failed: it stopped before finishing (a bug); no file was written\n`);
  process.exit(1);
});

main().then(
  () => {
    finished = true;
  },
  (err) => {
    finished = true;
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(78);
    }
    if (err instanceof BackupRefusedError || err instanceof RestoreRefusedError) {
      process.stderr.write(`${process.argv[2]} refused: ${err.message}\n`);
      process.exit(1);
    }
    const refusal = dataDirRefusal(err);
    if (refusal) {
      process.stderr.write(`${process.argv[2]} refused: ${refusal.message}\n`);
      process.exit(refusal.exitCode);
    }
    process.stderr.write(`${process.argv[2]} failed: ${(err as Error).stack ?? err}\n`);
    process.exit(1);
  },
);
