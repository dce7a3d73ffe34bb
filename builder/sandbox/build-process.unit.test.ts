import os from 'node:os';
import { describe, expect, it } from 'vitest';
import type { BuildLog } from '../build-log.ts';
import type { BuildCgroup } from './build-cgroup.ts';
import { runStep } from './build-process.ts';

/**
 * A step's outcome from its cgroup's counters, whatever the cgroup's kind (issue 38, row 5): a step any of whose
 * processes the kernel killed at the memory limit ends memory_limit even when it exited 0; a step that exited 0
 * having only brushed a limit (a fork refused and retried) succeeded. The cgroup here is a stand-in that reports
 * counters (the kernel's side runs in build-cgroup.test.ts and sandbox.test.ts).
 */
const log: BuildLog = { write() {}, line() {}, async close() {}, stored: 0, held: 0 };

function standIn(counters: { oomKills: number; exceeded?: 'memory_limit' | 'process_limit' }): BuildCgroup {
  return {
    version: 'v2',
    dirs: [],
    oomKills: async () => counters.oomKills,
    exceeded: async () => counters.exceeded,
    cpuSeconds: async () => 0,
    killAll: async () => undefined,
    remove: async () => undefined,
  };
}

const step = (argv: string[], cgroup: BuildCgroup) =>
  runStep({
    argv,
    env: { PATH: '/usr/bin:/bin' },
    cwd: os.tmpdir(),
    log,
    timeoutMs: 30_000,
    cgroup,
    limits: { cpuSeconds: 60, diskBytes: 1024 ** 3 },
    diskUsage: async () => 0,
  });

describe('a step and the memory limit', () => {
  it('exited 0 after a process of it was OOM-killed: memory_limit', async () => {
    const r = await step(['/bin/true'], standIn({ oomKills: 1, exceeded: 'memory_limit' }));
    expect(r).toMatchObject({ exitCode: 0, limit: 'memory_limit' });
  });

  it('exited 0 with no OOM kill, though a fork was refused on the way: no limit', async () => {
    const r = await step(['/bin/true'], standIn({ oomKills: 0, exceeded: 'process_limit' }));
    expect(r.exitCode).toBe(0);
    expect(r.limit).toBeUndefined();
  });

  it('failed at the process limit: process_limit', async () => {
    const r = await step(['/bin/false'], standIn({ oomKills: 0, exceeded: 'process_limit' }));
    expect(r).toMatchObject({ exitCode: 1, limit: 'process_limit' });
  });
});
