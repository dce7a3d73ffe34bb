import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Issue 23: started where no cgroup memory file is visible (a container, a sandbox), chDB printed a 20-line native
 * stack trace ("Cannot use cgroups reader") at start. The embedded store opens chDB with the memory worker reading
 * RSS instead. Played here in a mount namespace with /sys/fs/cgroup hidden (root; util-linux's unshare).
 */
describe('the embedded analytical store starts quietly without cgroups', () => {
  it('prints nothing on stderr when /sys/fs/cgroup is empty', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'chdb-quiet-'));
    const script = path.join(dir, 'open.mts'); // ESM outside this package (top-level await)
    writeFileSync(
      script,
      `import { createChdbStore } from ${JSON.stringify(path.resolve('platform/adapters/analytical/chdb-store.ts'))};\n` +
        `const store = await createChdbStore(${JSON.stringify(path.join(dir, 'data'))});\n` +
        `console.log(JSON.stringify(await store.query('SELECT 1 AS one')));\nawait store.close();\n`,
    );
    const out = execFileSync('unshare', ['-m', 'sh', '-c', `mount -t tmpfs none /sys/fs/cgroup && exec "${process.execPath}" --import tsx "${script}" 2>&1`], {
      cwd: process.cwd(),
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(out).not.toContain('Cannot use cgroups reader');
    expect(out.trim()).toBe('[{"one":1}]');
  });
});
