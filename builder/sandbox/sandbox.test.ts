import { execFileSync } from 'node:child_process';
import http from 'node:http';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BuildLog } from '../build-log.ts';
import type { DeployCommit } from '../../domain/deploys/suspect-commits.ts';
import { LIMITS_UNAVAILABLE_LINE, runBuild, UNLIMITED_BUILD_LINE, type BuildIsolation, type BuildOutcome } from '../build-run.ts';
import { probeBuildCgroups } from './build-cgroup.ts';
import { probeSandbox } from './sandbox.ts';
import { createPublicInternetGuard } from '../../platform/adapters/outbound/public-internet-guard.ts';
import { createTestOutboundGuard } from '../../platform/adapters/outbound/test-guard.ts';
/** The tests' stand-in registry listens on loopback: the only private destination these builds may reach. */
const loopbackRegistry = createTestOutboundGuard({ loopback: ['build_egress'] });

/**
 * The sandbox plays against a hostile tenant (issue 22, rows 3-5 and the sandbox's own rules): what a build can
 * read, write, reach and leave behind, and the limits it runs into. Each build is a real repository built by
 * runBuild exactly as the builder runs it, sandboxed with bubblewrap.
 */
const CANARY = `canary-${process.pid}-${Date.now()}`;
let repo: string;
let base: string;
let dataDir: string;
let standIn: http.Server;
let standInPort: number;

function git(cwd: string, ...args: string[]) {
  return execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { cwd, encoding: 'utf8' }).trim();
}

/** One branch per behaviour: its build.sh (and any extra files) is what the build runs. */
function branch(name: string, script: string, files: Record<string, string> = {}) {
  git(repo, 'checkout', '-q', '--orphan', name);
  git(repo, 'rm', '-rq', '--cached', '.', '--ignore-unmatch');
  for (const f of readdirSync(repo)) if (f !== '.git') execFileSync('rm', ['-rf', path.join(repo, f)]);
  writeFileSync(path.join(repo, 'build.sh'), script);
  for (const [f, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(repo, f)), { recursive: true });
    writeFileSync(path.join(repo, f), text);
  }
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', name);
}

function memoryLog(): BuildLog & { text(): string } {
  const lines: string[] = [];
  const carry: Record<string, string> = {};
  return {
    write(stream, chunk) {
      const parts = ((carry[stream] ?? '') + chunk).split('\n');
      carry[stream] = parts.pop()!;
      lines.push(...parts);
    },
    line: (_s, t) => void lines.push(t),
    async close() {},
    get stored() {
      return lines.length;
    },
    held: 0,
    text: () => [...lines, ...Object.values(carry)].join('\n'),
  };
}

const isolation = (over: Partial<BuildIsolation> = {}): BuildIsolation => ({
  sandbox: true,
  network: 'proxy',
  uid: 65534,
  memoryBytes: 512 * 1024 * 1024,
  pids: 128,
  cpuSeconds: 60,
  diskBytes: 512 * 1024 * 1024,
  tmpBytes: 64 * 1024 * 1024,
  artifact: { maxBytes: 10 * 1024 * 1024, maxFiles: 100, maxFileBytes: 1024 * 1024 },
  // builds' egress reaches only public addresses, as in production
  guard: createPublicInternetGuard(),
  ...over,
});

async function build(
  branchName: string,
  o: { iso?: Partial<BuildIsolation>; timeoutMs?: number; signal?: AbortSignal; outputDir?: string; env?: Record<string, string> } = {},
) {
  const log = memoryLog();
  const id = `dep_${branchName.replace(/\W/g, '')}_${Math.random().toString(36).slice(2, 8)}`;
  const artifactDir = path.join(dataDir, 'artifacts', id);
  const started = Date.now();
  const commits: DeployCommit[] = [];
  const outcome: BuildOutcome = await runBuild({
    deployId: id,
    branch: branchName,
    environment: 'preview',
    repoUrl: repo,
    buildCommand: 'sh build.sh',
    outputDir: o.outputDir ?? 'out',
    env: o.env ?? {},
    workDir: path.join(base, id),
    artifactDir,
    timeoutMs: o.timeoutMs ?? 30_000,
    log,
    onSha: async () => undefined,
    onCommits: async (c) => void commits.push(...c),
    signal: o.signal,
    isolation: isolation(o.iso),
  });
  return { outcome, log: log.text(), artifactDir, ms: Date.now() - started, commits };
}

/** Host processes whose command line carries the marker (a build's stray must not be among them). */
function hostProcesses(marker: string): string[] {
  const out: string[] = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    const cmd = (() => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      } catch {
        return '';
      }
    })();
    if (cmd.includes(marker) && !cmd.includes('vitest')) out.push(`${pid}: ${cmd}`);
  }
  return out;
}

beforeAll(async () => {
  const probe = await probeSandbox(65534);
  if (!probe.available) throw new Error(`the sandbox tests need bubblewrap: ${probe.message}`);
  process.env.SERVICE_TEST_CANARY = CANARY;
  base = mkdtempSync(path.join(os.tmpdir(), 'sandbox-builds-'));
  chmodSync(base, 0o711); // as the builder makes BUILD_DIR: traversable, not listable
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'sandbox-data-'));
  writeFileSync(path.join(dataDir, 'secret.db'), CANARY);
  repo = mkdtempSync(path.join(os.tmpdir(), 'sandbox-repo-'));
  git(repo, 'init', '-q', '-b', 'main');
  standIn = http.createServer((_req, res) => res.end('stand-in registry'));
  await new Promise<void>((r) => standIn.listen(0, '127.0.0.1', r));
  standInPort = (standIn.address() as { port: number }).port;
});
afterAll(async () => {
  delete process.env.SERVICE_TEST_CANARY;
  await new Promise((r) => standIn?.close(r));
});

describe('what a sandboxed build can read and write', () => {
  it('sees its checkout, a private /tmp and the system read-only; nothing of the service, its environment, DATA_DIR, its source or other builds', async () => {
    branch(
      'peek',
      [
        'echo "uid=$(id -u)"',
        'echo "pid1=$(tr "\\0" " " < /proc/1/cmdline)"',
        `for p in /proc/[0-9]*; do cat $p/environ 2>/dev/null | tr "\\0" "\\n"; done | grep -c ${CANARY} | sed "s/^/canary-in-environ=/"`,
        `grep -rsl ${CANARY} /etc /tmp /sandbox /work/home /run /var /root /home 2>/dev/null | sed "s/^/canary-file=/"`,
        `test -e ${JSON.stringify(dataDir)} && echo "datadir-visible" || echo "datadir-hidden"`,
        `test -e ${JSON.stringify(process.cwd())}/package.json && echo "source-visible" || echo "source-hidden"`,
        `test -e ${JSON.stringify(base)} && echo "builds-visible" || echo "builds-hidden"`,
        'touch /usr/bin/pwned 2>/dev/null && echo "usr-writable" || echo "usr-readonly"',
        'touch /etc/pwned 2>/dev/null && echo "etc-writable" || echo "etc-readonly"',
        'echo x > /tmp/t && echo "tmp-writable"',
        'ls /etc | tr "\\n" " " | sed "s/^/etc=/"; echo',
        'mkdir -p out && echo ok > out/index.html',
      ].join('\n'),
    );
    const r = await build('peek');
    expect(r.outcome, r.log).toMatchObject({ ok: true });
    expect(r.log).toContain('uid=65534');
    expect(r.log).toMatch(/pid1=bwrap /); // its own PID namespace: PID 1 is the sandbox's init, not the service
    expect(r.log).toContain('canary-in-environ=0');
    expect(r.log).not.toContain('canary-file=');
    for (const hidden of ['datadir-hidden', 'source-hidden', 'builds-hidden', 'usr-readonly', 'etc-readonly', 'tmp-writable']) expect(r.log).toContain(hidden);
    expect(r.log).not.toMatch(/etc=.*\bshadow\b/);
    // Its commits (issue 41) are read from the sandbox's checkout: with no previous deploy, the head commit alone.
    expect(r.commits, r.log).toHaveLength(1);
  });

  it('cannot reach loopback services (Postgres, the stand-in) directly, nor through the proxy; a public-only proxy refuses loopback', async () => {
    branch(
      'net',
      [
        `node -e "require('net').connect(5432,'127.0.0.1').on('connect',()=>console.log('pg-direct-open')).on('error',e=>console.log('pg-direct-'+e.code))"`,
        `node -e "require('net').connect(${standInPort},'127.0.0.1').on('connect',()=>console.log('standin-direct-open')).on('error',e=>console.log('standin-direct-'+e.code))"`,
        `node -e "require('http').get({host:'127.0.0.1',port:3128,path:'http://127.0.0.1:${standInPort}/'},r=>console.log('proxy-http-'+r.statusCode)).on('error',e=>console.log('proxy-http-'+e.code))"`,
        `node -e "require('http').request({host:'127.0.0.1',port:3128,method:'CONNECT',path:'127.0.0.1:5432'}).on('connect',r=>{console.log('proxy-connect-'+r.statusCode);process.exit(0)}).on('error',e=>console.log('proxy-connect-'+e.code)).end()"`,
        `node -e "require('http').request({host:'127.0.0.1',port:3128,method:'CONNECT',path:'10.0.0.1:443'}).on('connect',r=>{console.log('private-connect-'+r.statusCode);process.exit(0)}).on('error',e=>console.log('private-connect-'+e.code)).end()"`,
        'mkdir -p out && echo ok > out/index.html',
      ].join('\n'),
    );
    const r = await build('net');
    expect(r.outcome, r.log).toMatchObject({ ok: true });
    expect(r.log).toContain('pg-direct-ECONNREFUSED');
    expect(r.log).toContain('standin-direct-ECONNREFUSED');
    expect(r.log).toContain('proxy-http-403');
    expect(r.log).toContain('proxy-connect-403');
    expect(r.log).toContain('private-connect-403');
    expect(r.log).toMatch(/network: refused 127\.0\.0\.1:5432/);
  });

  it('reaches an allowed destination through the proxy (a loopback stand-in the test-only allowance admits), and nothing without BUILD_NETWORK=proxy', async () => {
    branch(
      'fetch',
      [
        `node -e "require('http').get({host:'127.0.0.1',port:3128,path:'http://127.0.0.1:${standInPort}/pkg'},r=>{let b='';r.on('data',c=>b+=c);r.on('end',()=>console.log('fetched: '+r.statusCode+' '+b))}).on('error',e=>console.log('fetch-error-'+e.code))"`,
        'echo "proxy=${HTTPS_PROXY:-none}"',
        'mkdir -p out && echo ok > out/index.html',
      ].join('\n'),
    );
    const allowed = await build('fetch', { iso: { guard: loopbackRegistry } });
    expect(allowed.log).toContain('fetched: 200 stand-in registry');
    expect(allowed.log).toContain('proxy=http://127.0.0.1:3128');
    // The same through the node relay (machines without socat).
    const viaNode = await build('fetch', { iso: { guard: loopbackRegistry, relay: 'node' } });
    expect(viaNode.log).toContain('fetched: 200 stand-in registry');
    const none = await build('fetch', { iso: { guard: loopbackRegistry, network: 'none' } });
    expect(none.log).toContain('fetch-error-ECONNREFUSED');
    expect(none.log).toContain('proxy=none');
  });
});

describe('every process a build starts dies with it', () => {
  it('a detached (setsid) child and a double fork end with a successful build; the builder does not wait for them', async () => {
    const marker = `stray-${process.pid}-a`;
    branch(
      'strays',
      [
        `setsid sh -c 'exec -a ${marker} sleep 110' > /dev/null 2>&1 &`,
        `(sh -c 'exec -a ${marker} sleep 110' &) `,
        `setsid sh -c 'sleep 110 # ${marker}' &`,
        'mkdir -p out && echo ok > out/index.html',
      ].join('\n'),
    );
    const r = await build('strays');
    expect(r.outcome, r.log).toMatchObject({ ok: true });
    expect(r.ms).toBeLessThan(20_000);
    await new Promise((res) => setTimeout(res, 200));
    expect(hostProcesses(marker)).toEqual([]);
  });

  it('on timeout and on cancel, the build ends within 2 s with every process gone', async () => {
    const marker = `stray-${process.pid}-b`;
    branch('hang', [`setsid sh -c 'sleep 110 # ${marker}' &`, `sh -c 'sleep 110 # ${marker}'`].join('\n'));
    const timed = await build('hang', { timeoutMs: 3_000 });
    expect(timed.outcome).toMatchObject({ ok: false, reason: 'timeout' });
    expect(timed.ms).toBeLessThan(3_000 + 2_000 + 1_500); // + checkout and cleanup
    expect(hostProcesses(marker)).toEqual([]);

    const abort = new AbortController();
    const p = build('hang', { signal: abort.signal });
    await new Promise((res) => setTimeout(res, 1_500));
    const at = Date.now();
    abort.abort();
    const canceled = await p;
    expect(Date.now() - at).toBeLessThan(2_000);
    expect(canceled.outcome.ok).toBe(false);
    expect(hostProcesses(marker)).toEqual([]);
  });
});

describe('resource limits end a build with their own reason', () => {
  it('memory: memory_limit', async () => {
    branch('memory', `node -e "const a=[];for(;;)a.push(Buffer.alloc(1<<20,1))"`);
    const r = await build('memory', { iso: { memoryBytes: 64 * 1024 * 1024 } });
    expect(r.outcome, r.log).toMatchObject({ ok: false, reason: 'memory_limit' });
    expect(r.log).toContain('BUILD_MEMORY_MB');
  });

  it('memory: a process the limit killed fails the build as memory_limit, even when the command swallows it and exits 0 (issue 38, row 5)', async () => {
    // Which cgroups ran this: the machine's own (v1 memory and pids on the development machine).
    const here = await probeBuildCgroups();
    expect(here.ok, JSON.stringify(here)).toBe(true);
    branch(
      'memory-swallowed',
      [`node -e "const a=[];for(;;)a.push(Buffer.alloc(1<<20,1))" || echo "hog-died-${'$'}?"`, 'mkdir -p out && echo ok > out/index.html'].join('\n'),
    );
    for (const sandbox of [true, false]) {
      const r = await build('memory-swallowed', { iso: { sandbox, memoryBytes: 64 * 1024 * 1024 } });
      expect(r.log).toMatch(/hog-died-137/); // SIGKILL from the kernel's OOM killer; the command went on and exited 0
      expect(r.outcome, r.log).toMatchObject({ ok: false, reason: 'memory_limit' });
      expect(r.log).toContain('BUILD_MEMORY_MB');
      expect(existsSync(r.artifactDir)).toBe(false);
    }
  });

  it('processes: process_limit', async () => {
    branch('forks', 'for i in $(seq 1 60); do sleep 5 & done; wait; mkdir -p out; echo ok > out/index.html');
    const r = await build('forks', { iso: { pids: 20 } });
    expect(r.outcome, r.log).toMatchObject({ ok: false, reason: 'process_limit' });
  });

  it('CPU time: cpu_limit', async () => {
    branch('spin', 'while :; do :; done');
    const r = await build('spin', { iso: { cpuSeconds: 1 } });
    expect(r.outcome, r.log).toMatchObject({ ok: false, reason: 'cpu_limit' });
  });

  it('disk written: disk_limit', async () => {
    branch('disk', 'head -c 40000000 /dev/zero > big.bin; sleep 10; mkdir -p out');
    const r = await build('disk', { iso: { diskBytes: 8 * 1024 * 1024 } });
    expect(r.outcome, r.log).toMatchObject({ ok: false, reason: 'disk_limit' });
  });
});

describe('the sandbox root is read-only (issue 38, row 5)', () => {
  it('writing anywhere but the checkout, HOME, /tmp and /dev/shm fails; /tmp and /dev/shm are bounded', async () => {
    const tries = ['/x', '/usr/x', '/etc/x', '/var/x', '/home/x', '/root/x', '/sandbox/x', '/dev/x', '/proc/x'];
    branch(
      'rootfs',
      [
        ...tries.map((p) => `mkdir -p "$(dirname ${p})" 2>/dev/null; echo pwned > ${p} 2>/dev/null && echo "writable ${p}" || echo "refused ${p}"`),
        'echo hi > /work/home/x && echo "writable home"',
        'echo hi > x && echo "writable checkout"',
        // 8 MB each: a 16 MB write runs out of space; what fits stays.
        'head -c 16000000 /dev/zero > /tmp/big 2>/dev/null && echo "tmp-unbounded" || echo "tmp-full at $(du -k /tmp/big | cut -f1) KB"',
        'rm -f /tmp/big',
        'head -c 16000000 /dev/zero > /dev/shm/big 2>/dev/null && echo "shm-unbounded" || echo "shm-full at $(du -k /dev/shm/big | cut -f1) KB"',
        'echo still > /dev/null && echo "dev-null-ok"',
        'mkdir -p out && echo ok > out/index.html',
      ].join('\n'),
    );
    const r = await build('rootfs', { iso: { tmpBytes: 8 * 1024 * 1024 } });
    expect(r.outcome, r.log).toMatchObject({ ok: true });
    for (const p of tries) expect(r.log).toContain(`refused ${p}`);
    expect(r.log).not.toContain('writable /');
    expect(r.log).toContain('writable home');
    expect(r.log).toContain('writable checkout');
    expect(r.log).toMatch(/tmp-full at 8\d{3} KB/);
    expect(r.log).toMatch(/shm-full at 8\d{3} KB/);
    expect(r.log).toContain('dev-null-ok');
  });
});

describe('builds without limits (issue 38, row 4)', () => {
  // A host with no cgroup at all (no v2 subtree, no v1 hierarchy): as a container without /sys/fs/cgroup.
  const nowhere = () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'no-cgroups-'));
    writeFileSync(path.join(dir, 'cgroup'), '');
    writeFileSync(path.join(dir, 'mountinfo'), '');
    return { cgroupFile: path.join(dir, 'cgroup'), mountinfoFile: path.join(dir, 'mountinfo') };
  };

  it('where no cgroup can be made, the build fails limits_unavailable before anything runs', async () => {
    branch('nolimits', 'echo BUILD-RAN; mkdir -p out && echo ok > out/index.html');
    const r = await build('nolimits', { iso: { cgroupHost: nowhere() } });
    expect(r.outcome).toMatchObject({ ok: false, reason: 'limits_unavailable' });
    expect(r.log).toContain(LIMITS_UNAVAILABLE_LINE);
    expect(r.log).toContain('cgroup v2: not mounted; cgroup v1: no memory hierarchy mounted');
    expect(r.log).not.toContain('checking out');
    expect(r.log).not.toContain('BUILD-RAN');
  });

  it('with BUILD_ALLOW_UNLIMITED it runs, and its log warns', async () => {
    const r = await build('nolimits', { iso: { cgroupHost: nowhere(), allowUnlimited: true } });
    expect(r.outcome, r.log).toMatchObject({ ok: true });
    expect(r.log).toContain(UNLIMITED_BUILD_LINE);
    expect(r.log).toContain('BUILD-RAN');
  });
});

describe('artifacts hold regular files inside the output only (row 3)', () => {
  it('an output directory that is a link to / fails with output_escapes, and nothing is kept', async () => {
    branch('rootlink', 'ln -s / rootlink');
    const r = await build('rootlink', { outputDir: 'rootlink' });
    expect(r.outcome).toMatchObject({ ok: false, reason: 'output_escapes' });
    expect(existsSync(r.artifactDir)).toBe(false);
  });

  it('a committed link that leaves the output fails with output_escapes naming it', async () => {
    branch('escape', 'mkdir -p out/deep && echo ok > out/index.html', {});
    execFileSync('ln', ['-s', '/proc/self/environ', path.join(repo, 'env.txt')]);
    // committed in the output itself
    mkdirSync(path.join(repo, 'out'), { recursive: true });
    execFileSync('ln', ['-s', '../../../../../../../../../../etc/passwd', path.join(repo, 'out', 'passwd.txt')]);
    git(repo, 'add', '-A');
    git(repo, 'commit', '-q', '-m', 'links');
    const r = await build('escape');
    expect(r.outcome).toMatchObject({ ok: false, reason: 'output_escapes' });
    expect(r.log).toContain('passwd.txt is a link that leaves the output directory');
    // An absolute link too.
    branch('escape2', 'mkdir -p out && ln -s /proc/self/environ out/env.txt && echo ok > out/index.html');
    const abs = await build('escape2');
    expect(abs.outcome).toMatchObject({ ok: false, reason: 'output_escapes' });
    expect(abs.log).toContain('env.txt is a link that leaves the output directory');
  });

  it('links to files inside the output are copied as files; links to directories are dropped with a line', async () => {
    branch('innerlinks', 'mkdir -p out/a && echo hello > out/a/real.txt && ln -s a/real.txt out/alias.txt && ln -s a out/dirlink && ln -s . out/loop');
    const r = await build('innerlinks');
    expect(r.outcome, r.log).toMatchObject({ ok: true });
    expect(readFileSync(path.join(r.artifactDir, 'alias.txt'), 'utf8')).toBe('hello\n');
    expect(existsSync(path.join(r.artifactDir, 'dirlink'))).toBe(false);
    expect(r.log).toContain('dropped dirlink');
  });

  it('file count, single file size and total bytes each fail with their reason', async () => {
    branch('many', 'mkdir -p out && for i in $(seq 1 150); do echo $i > out/f$i.txt; done');
    expect((await build('many')).outcome).toMatchObject({ ok: false, reason: 'too_many_files' });
    branch('bigfile', 'mkdir -p out && head -c 2000000 /dev/zero > out/big.bin');
    expect((await build('bigfile')).outcome).toMatchObject({ ok: false, reason: 'file_too_large' });
    branch('total', 'mkdir -p out && for i in $(seq 1 12); do head -c 1000000 /dev/zero > out/f$i.bin; done');
    expect((await build('total')).outcome).toMatchObject({ ok: false, reason: 'artifact_too_large' });
  });
});

describe('without bubblewrap', () => {
  it('the probe says the sandbox is unavailable and names the package to install', async () => {
    const probe = await probeSandbox(65534, '/nonexistent/bwrap');
    expect(probe).toMatchObject({ available: false });
    expect((probe as { message: string }).message).toContain('apt-get install bubblewrap');
  });
});

describe('BUILD_SANDBOX=off', () => {
  it('says so in the build log, and still ends every process the build started (the cgroup)', async () => {
    const marker = `stray-${process.pid}-off`;
    branch('off', [`setsid sh -c 'sleep 110 # ${marker}' &`, 'mkdir -p out && echo ok > out/index.html'].join('\n'));
    const r = await build('off', { iso: { sandbox: false } });
    expect(r.outcome, r.log).toMatchObject({ ok: true });
    expect(r.log).toContain('WARNING: this build is not sandboxed (BUILD_SANDBOX=off)');
    await new Promise((res) => setTimeout(res, 200));
    expect(hostProcesses(marker)).toEqual([]);
  });
});
