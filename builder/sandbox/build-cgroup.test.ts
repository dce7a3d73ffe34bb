import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createBuildCgroup, probeBuildCgroups, THIS_HOST, type BuildCgroup, type CgroupHost } from './build-cgroup.ts';

/**
 * Build cgroups (issue 38, row 4), against this machine's kernel and against fake cgroup2 trees.
 *   - "this machine": whichever kind the kernel gives this process (cgroup v1 memory, pids and cpuacct on the
 *     development machine and CI; v2 on a host with a delegated subtree) makes a group whose memory and process
 *     limits the kernel enforces: a process allocating past 32 MB is OOM-killed and counted, a fork past pids.max
 *     is refused and counted.
 *   - "this machine's cgroup2 mount": the v2 code alone against the real kernel's cgroup2 mount. Where it is given
 *     the memory and pids controllers (a v2 host, delegated), it makes the group and the kernel enforces it; where
 *     it is not (the development machine's hybrid layout: cgroup2 at /sys/fs/cgroup/unified holds only hugetlb),
 *     it refuses, naming what is missing. The test's name says which ran.
 *   - "a fake cgroup2 tree": a temp directory shaped like a delegated cgroup2 subtree, for what a v1 machine cannot
 *     show: controllers handed down through cgroup.subtree_control (the service's processes moved to a leaf first),
 *     memory.max, pids.max, memory.events oom_kill, pids.events, cpu.stat, cgroup.kill.
 */
const MB = 1024 * 1024;
const temp: string[] = [];
afterAll(() => {
  for (const d of temp) rmSync(d, { recursive: true, force: true });
});

/** Runs argv joined into the group (as build-process.ts joins a step), until it exits. */
function runIn(cg: BuildCgroup, script: string): Promise<{ code: number | null; signal: NodeJS.Signals | null; out: string }> {
  return new Promise((resolve) => {
    const join = 'for d in "$@"; do echo $$ > "$d/cgroup.procs" || exit 125; done; exec /bin/sh -c "$SCRIPT"';
    const child = spawn('/bin/sh', ['-c', join, 'join', ...cg.dirs], { env: { PATH: process.env.PATH, SCRIPT: script }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (out += c));
    child.on('close', (code, signal) => resolve({ code, signal, out }));
  });
}

const HOG = `node -e "const a=[];for(;;)a.push(Buffer.alloc(1<<20,1))"`;

describe('this machine', async () => {
  const here = await probeBuildCgroups();
  const kind = here.ok ? `cgroup ${here.version}` : 'no usable cgroup';

  it(`makes a build group the kernel enforces (ran here with: ${kind})`, async () => {
    expect(here, 'this machine must give builds a cgroup (README, "Builds without limits")').toMatchObject({ ok: true });
    const made = await createBuildCgroup(`test-real-${process.pid}`, { memoryBytes: 32 * MB, pids: 16 });
    if (!made.ok) throw new Error(made.why);
    const cg = made.cgroup;
    try {
      expect(await cg.oomKills()).toBe(0);
      expect(await cg.exceeded()).toBeUndefined();
      // A process past the memory limit is killed by the kernel, and counted.
      const hog = await runIn(cg, `${HOG} || echo "hog-exit-$?"`);
      expect(hog.out).toContain('hog-exit-137');
      expect(await cg.oomKills()).toBeGreaterThan(0);
      expect(await cg.exceeded()).toBe('memory_limit');
      expect(await cg.cpuSeconds()).toBeGreaterThan(0);
    } finally {
      await cg.killAll();
      await cg.remove();
    }
    for (const d of cg.dirs) expect(existsSync(d)).toBe(false);
  });

  it(`refuses a fork past pids.max, and says so (ran here with: ${kind})`, async () => {
    const made = await createBuildCgroup(`test-pids-${process.pid}`, { memoryBytes: 256 * MB, pids: 8 });
    if (!made.ok) throw new Error(made.why);
    const cg = made.cgroup;
    try {
      // dash gives up at the first fork refused; the sleeps it started are killed below.
      await runIn(cg, 'for i in $(seq 1 20); do sleep 5 >/dev/null 2>&1 & done');
      expect(await cg.exceeded()).toBe('process_limit');
      expect(await cg.oomKills()).toBe(0);
    } finally {
      await cg.killAll();
      await cg.remove();
    }
  });
});

describe("this machine's cgroup2 mount, the v2 code alone", async () => {
  // The real kernel's files, with the v1 hierarchies left out: what the v2 code sees on this kernel.
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cgroup-v2-only-'));
  temp.push(dir);
  const only = (file: string, keep: (line: string) => boolean) => {
    const out = path.join(dir, path.basename(file));
    writeFileSync(out, readFileSync(file, 'utf8').split('\n').filter(keep).join('\n'));
    return out;
  };
  const v2Only: CgroupHost = {
    cgroupFile: only(THIS_HOST.cgroupFile, (l) => l.startsWith('0::')),
    mountinfoFile: only(THIS_HOST.mountinfoFile, (l) => l.includes(' - cgroup2 ')),
  };
  const mounted = readFileSync(v2Only.mountinfoFile, 'utf8').trim() !== '';
  const probe = await probeBuildCgroups(v2Only);

  // One test whatever the host (a skipped test reads as a missing service in CI): it runs the branch this kernel
  // allows and its log line says which ran.
  it('the v2 code on this kernel: a group it enforces where v2 gives memory and pids, else a refusal naming why', async () => {
    if (probe.ok) {
      console.info('cgroup v2: ran on the kernel (memory and pids delegated here)');
      const made = await createBuildCgroup(`test-v2-${process.pid}`, { memoryBytes: 32 * MB, pids: 16 }, v2Only);
      if (!made.ok) throw new Error(made.why);
      const cg = made.cgroup;
      try {
        expect(cg.version).toBe('v2');
        expect(readFileSync(path.join(cg.dirs[0]!, 'memory.max'), 'utf8').trim()).toBe(String(32 * MB));
        const hog = await runIn(cg, `${HOG} || echo "hog-exit-$?"`);
        expect(hog.out).toContain('hog-exit-137');
        expect(await cg.exceeded()).toBe('memory_limit');
        expect(await cg.cpuSeconds()).toBeGreaterThan(0);
      } finally {
        await cg.killAll();
        await cg.remove();
      }
    } else if (mounted) {
      console.info('cgroup v2: this kernel mounts cgroup2 without memory and pids (hybrid layout): the refusal ran');
      expect((probe as { why: string }).why).toMatch(/^cgroup v2: .* is not given the .*memory.* controller/);
    } else {
      console.info('cgroup v2: not mounted here: the refusal ran');
      expect(probe).toMatchObject({ ok: false, why: expect.stringContaining('cgroup v2: not mounted') });
    }
  });
});

/**
 * A delegated cgroup2 subtree as files: the mount at `<dir>/mnt`, this process in `/svc` (or as `self` says), which
 * holds processes and is given cpu, memory and pids.
 */
function fakeV2(o: { self?: string; mountRoot?: string; svc?: string; controllers?: string; svcPids?: string; rootPids?: string } = {}) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'fake-cgroup2-'));
  temp.push(dir);
  const mnt = path.join(dir, 'mnt');
  const svc = path.join(mnt, o.svc ?? 'svc');
  mkdirSync(svc, { recursive: true });
  for (const [d, pids] of [
    [mnt, o.rootPids ?? '1\n'],
    [svc, o.svcPids ?? '4194301\n'],
  ] as const) {
    writeFileSync(path.join(d, 'cgroup.controllers'), o.controllers ?? 'cpuset cpu io memory hugetlb pids rdma misc\n');
    writeFileSync(path.join(d, 'cgroup.subtree_control'), '');
    writeFileSync(path.join(d, 'cgroup.procs'), pids);
  }
  writeFileSync(path.join(dir, 'mountinfo'), `41 31 0:38 ${o.mountRoot ?? '/'} ${mnt} rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw,nsdelegate\n`);
  writeFileSync(path.join(dir, 'cgroup'), `0::${o.self ?? '/svc'}\n`);
  const host: CgroupHost = { cgroupFile: path.join(dir, 'cgroup'), mountinfoFile: path.join(dir, 'mountinfo') };
  return { host, mnt, svc };
}

const text = (file: string) => readFileSync(file, 'utf8');

describe('a fake cgroup2 tree (v2 code paths a v1 machine cannot show)', () => {
  it('hands memory and pids down (the service moved to a leaf first), and sets memory.max, memory.swap.max, pids.max', async () => {
    const { host, mnt, svc } = fakeV2();
    const made = await createBuildCgroup('dep_a', { memoryBytes: 64 * MB, pids: 20 }, host);
    if (!made.ok) throw new Error(made.why);
    const build = path.join(svc, 'service-builds', 'dep_a');
    expect(made.cgroup.version).toBe('v2');
    expect(made.cgroup.dirs).toEqual([build]);
    // The service's processes left its cgroup for the leaf, so the cgroup may hand controllers down.
    expect(text(path.join(svc, 'service', 'cgroup.procs'))).toBe('4194301');
    expect(text(path.join(svc, 'cgroup.subtree_control'))).toBe('+memory +pids');
    expect(text(path.join(svc, 'service-builds', 'cgroup.subtree_control'))).toBe('+memory +pids');
    expect(text(path.join(build, 'memory.max'))).toBe(String(64 * MB));
    expect(text(path.join(build, 'pids.max'))).toBe('20');
    // The hierarchy's root is never touched.
    expect(text(path.join(mnt, 'cgroup.subtree_control'))).toBe('');
    expect(existsSync(path.join(mnt, 'service'))).toBe(false);
  });

  it('a group whose controllers are already handed down is used as it is (nothing moved)', async () => {
    const { host, svc } = fakeV2();
    writeFileSync(path.join(svc, 'cgroup.subtree_control'), 'memory pids\n');
    const made = await createBuildCgroup('dep_b', { memoryBytes: 64 * MB, pids: 20 }, host);
    expect(made.ok).toBe(true);
    expect(existsSync(path.join(svc, 'service'))).toBe(false);
    expect(text(path.join(svc, 'cgroup.subtree_control'))).toBe('memory pids\n');
  });

  it('reads memory.events oom_kill, pids.events max and cpu.stat usage_usec', async () => {
    const { host, svc } = fakeV2();
    const made = await createBuildCgroup('dep_c', { memoryBytes: 64 * MB, pids: 20 }, host);
    if (!made.ok) throw new Error(made.why);
    const cg = made.cgroup;
    const build = path.join(svc, 'service-builds', 'dep_c');
    expect(await cg.oomKills()).toBe(0);
    expect(await cg.exceeded()).toBeUndefined();
    writeFileSync(path.join(build, 'pids.events'), 'max 3\n');
    expect(await cg.exceeded()).toBe('process_limit');
    // The kernel's format: `max` counts hits of memory.max (reclaim), only oom_kill counts a killed process.
    writeFileSync(path.join(build, 'memory.events'), 'low 0\nhigh 0\nmax 57\noom 0\noom_kill 0\noom_group_kill 0\n');
    expect(await cg.oomKills()).toBe(0);
    writeFileSync(path.join(build, 'memory.events'), 'low 0\nhigh 0\nmax 212\noom 1\noom_kill 1\noom_group_kill 0\n');
    expect(await cg.oomKills()).toBe(1);
    expect(await cg.exceeded()).toBe('memory_limit');
    writeFileSync(path.join(build, 'cpu.stat'), 'usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n');
    expect(await cg.cpuSeconds()).toBe(2.5);
  });

  it('killAll writes cgroup.kill and kills every process listed in cgroup.procs', async () => {
    const { host, svc } = fakeV2();
    const made = await createBuildCgroup('dep_d', { memoryBytes: 64 * MB, pids: 20 }, host);
    if (!made.ok) throw new Error(made.why);
    const build = path.join(svc, 'service-builds', 'dep_d');
    writeFileSync(path.join(build, 'cgroup.kill'), '');
    // A process of the test's own, listed as the kernel would list a member; unlisted when it exits, as the kernel does.
    const child = spawn('sleep', ['60'], { stdio: 'ignore' });
    const exited = new Promise<NodeJS.Signals | null>((r) =>
      child.on('exit', (_c, signal) => {
        writeFileSync(path.join(build, 'cgroup.procs'), '');
        r(signal);
      }),
    );
    writeFileSync(path.join(build, 'cgroup.procs'), `${child.pid}\n`);
    await made.cgroup.killAll();
    expect(await exited).toBe('SIGKILL');
    expect(text(path.join(build, 'cgroup.kill'))).toBe('1');
  });

  it("at the mount's root (a container's own cgroup namespace) nothing is moved unless the kernel refuses", async () => {
    const { host, mnt } = fakeV2({ self: '/' });
    const made = await createBuildCgroup('dep_e', { memoryBytes: 64 * MB, pids: 20 }, host);
    if (!made.ok) throw new Error(made.why);
    expect(made.cgroup.dirs).toEqual([path.join(mnt, 'service-builds', 'dep_e')]);
    expect(existsSync(path.join(mnt, 'service'))).toBe(false);
    expect(text(path.join(mnt, 'cgroup.procs'))).toBe('1\n');
    expect(text(path.join(mnt, 'cgroup.subtree_control'))).toBe('+memory +pids');
  });

  it('a container without a cgroup namespace: the mount shows its own part of the hierarchy', async () => {
    const { host, mnt } = fakeV2({ self: '/docker/abc', mountRoot: '/docker/abc', svc: '.' });
    const made = await createBuildCgroup('dep_f', { memoryBytes: 64 * MB, pids: 20 }, host);
    if (!made.ok) throw new Error(made.why);
    expect(made.cgroup.dirs).toEqual([path.join(mnt, 'service-builds', 'dep_f')]);
  });

  it('a subtree without the memory or pids controller is refused, naming what is missing; with no v1 either, no group', async () => {
    const { host } = fakeV2({ controllers: 'cpu io hugetlb\n' });
    const made = await createBuildCgroup('dep_g', { memoryBytes: 64 * MB, pids: 20 }, host);
    expect(made).toMatchObject({ ok: false });
    const why = (made as { why: string }).why;
    expect(why).toMatch(/cgroup v2: .*svc is not given the memory and pids controllers \(it has: cpu io hugetlb\)/);
    expect(why).toContain('cgroup v1: no memory hierarchy mounted');
  });

  it("this process's cgroup outside the mounted part of the hierarchy is refused", async () => {
    const { host } = fakeV2({ self: '/elsewhere', mountRoot: '/docker/abc' });
    const made = await createBuildCgroup('dep_h', { memoryBytes: 64 * MB, pids: 20 }, host);
    expect(made).toMatchObject({ ok: false, why: expect.stringContaining("cgroup v2: this process's cgroup /elsewhere is not visible") });
  });
});
