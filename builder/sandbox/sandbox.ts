import { execFile } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { chmod, chown, copyFile, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { fromSourceRoot } from '../../platform/source-root.ts';

/**
 * The build sandbox: bubblewrap (Debian's `bwrap`), no container runtime and no image. A sandboxed step sees
 *   /usr, /bin, /lib...   the system's programs, read-only
 *   /etc                  only certificates, alternatives, ld.so.cache and a generated passwd, group and hosts
 *   /work                 its own build directory, read-write (the checkout is /work/src, HOME is /work/home)
 *   /tmp                  a private tmpfs, size-limited (BUILD_TMP_MB)
 *   /proc, /dev           its own PID namespace's /proc, a minimal read-only /dev with a private /dev/shm (at most
 *                         SHM_BYTES, as Docker's 64 MB)
 *   /sandbox              the init script, the egress socket and (local repositories) the source bundle, read-only
 * and nothing else: the root itself is read-only (bwrap's root is a tmpfs: writable, a build could fill memory with
 * it), so a build writes only its checkout, HOME, /tmp and /dev/shm, the last two bounded. It sees nothing of
 * DATA_DIR, the service's source, other builds or the service's environment (the step's environment is exactly what
 * the builder passes). It runs as an unprivileged user (uid BUILD_UID on the
 * host when the service is root, and inside its own user namespace either way), with every capability dropped,
 * in new mount, PID, IPC, UTS, cgroup and network namespaces. Its network namespace holds only loopback: the
 * init script relays 127.0.0.1:3128 to the builder's egress proxy (egress-proxy.ts) over a bind-mounted Unix
 * socket when BUILD_NETWORK=proxy, and there is no way out at all when it is `none`. When the step's first
 * process exits, the PID namespace ends and the kernel kills every process left in it; `--die-with-parent` does
 * the same when the builder kills the sandbox from outside.
 */
export const INSIDE = {
  root: '/work',
  src: '/work/src',
  home: '/work/home',
  init: '/sandbox/init.mjs',
  socket: '/sandbox/egress.sock',
  bundle: '/sandbox/source.bundle',
  proxyPort: 3128,
} as const;

const INIT_SCRIPT = fromSourceRoot('builder', 'sandbox', 'sandbox-init.mjs');
/** The most a build's /dev/shm holds (POSIX shared memory, semaphores: Chromium, Python's multiprocessing). */
const SHM_BYTES = 64 * 1024 * 1024;
const ETC_FROM_HOST = ['/etc/ssl', '/etc/ca-certificates', '/etc/alternatives', '/etc/ld.so.cache', '/etc/localtime', '/etc/mime.types'];

export type SandboxProbe = { available: true; version: string } | { available: false; message: string };

const probed = new Map<string, Promise<SandboxProbe>>();

/** Whether builds can be sandboxed here: bwrap is installed and can make its namespaces. Probed once. */
export function probeSandbox(uid: number, bwrap = 'bwrap'): Promise<SandboxProbe> {
  const key = `${bwrap}:${uid}`;
  let probe = probed.get(key);
  if (probe !== undefined) return probe;
  probe = (async (): Promise<SandboxProbe> => {
    const run = promisify(execFile);
    let version: string;
    try {
      version = (await run(bwrap, ['--version'])).stdout.trim();
    } catch {
      return {
        available: false,
        message:
          'bubblewrap (bwrap) is not installed: install the `bubblewrap` package (apt-get install bubblewrap), or set BUILD_SANDBOX=off on a single-tenant machine',
      };
    }
    try {
      const [cmd, ...args] = sandboxArgv({ uid, root: '/', mounts: [] }, ['/bin/true']);
      await run(cmd!, args, { timeout: 10_000 });
      return { available: true, version };
    } catch (err) {
      return {
        available: false,
        message: `${version} cannot create its namespaces here (${((err as { stderr?: string }).stderr ?? (err as Error).message).trim().slice(0, 200)}): allow unprivileged user namespaces, or set BUILD_SANDBOX=off on a single-tenant machine`,
      };
    }
  })();
  probed.set(key, probe);
  return probe;
}

export interface SandboxSpec {
  /** The build's uid on the host (used when the service runs as root). */
  uid: number;
  /** Host directory mounted read-write at /work. */
  root: string;
  /** Read-only files or directories: host path -> path inside. */
  mounts: Array<{ host: string; inside: string }>;
  /** Host path of the egress socket, when the build may reach the network through the proxy. */
  egressSocket?: string;
  /** Bytes of the private /tmp. */
  tmpBytes?: number;
  /** Host directory holding the generated passwd, group and hosts (prepareSandboxRoot). */
  etcDir?: string;
  /** Host copy of the init script (prepareSandboxRoot); the service's own tree may not be readable by the build user. */
  initScript?: string;
  /** The relay to the egress socket: socat when installed (default), or the node init script. */
  relay?: 'auto' | 'node';
}

/** The argv that runs `command` inside the sandbox, with the step's first process being the init script. */
export function sandboxArgv(spec: SandboxSpec, command: string[], cwd: string = INSIDE.root): string[] {
  const asRoot = process.getuid?.() === 0;
  const drop = asRoot ? ['setpriv', `--reuid=${spec.uid}`, `--regid=${spec.uid}`, '--clear-groups', '--'] : [];
  const args = [
    'bwrap',
    '--unshare-all',
    ...(asRoot ? [] : ['--unshare-user', '--uid', String(spec.uid), '--gid', String(spec.uid)]),
    '--die-with-parent',
    '--new-session',
    '--hostname',
    'build',
    '--ro-bind',
    '/usr',
    '/usr',
    '--symlink',
    'usr/bin',
    '/bin',
    '--symlink',
    'usr/sbin',
    '/sbin',
    '--symlink',
    'usr/lib',
    '/lib',
    ...(existsSync('/usr/lib64') ? ['--symlink', 'usr/lib64', '/lib64'] : []),
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--size',
    String(Math.min(SHM_BYTES, spec.tmpBytes ?? SHM_BYTES)),
    '--tmpfs',
    '/dev/shm',
    '--remount-ro',
    '/dev',
    ...(spec.tmpBytes ? ['--size', String(spec.tmpBytes)] : []),
    '--tmpfs',
    '/tmp',
  ];
  // /etc is the generated directory, read-only, with the host's certificates (and the like) mounted on its
  // prepared mount points.
  if (spec.etcDir) args.push('--ro-bind', spec.etcDir, '/etc');
  else args.push('--dir', '/etc');
  for (const p of ETC_FROM_HOST) args.push('--ro-bind-try', p, p);
  // The system's node, when it lives outside /usr (nvm, /opt): the init script needs it.
  const nodeHome = path.dirname(path.dirname(process.execPath));
  if (!process.execPath.startsWith('/usr/')) args.push('--ro-bind', nodeHome, nodeHome);
  args.push('--bind', spec.root, INSIDE.root);
  args.push('--ro-bind', spec.initScript ?? INIT_SCRIPT, INSIDE.init);
  for (const m of spec.mounts) args.push('--ro-bind', m.host, m.inside);
  if (spec.egressSocket) args.push('--bind', spec.egressSocket, INSIDE.socket);
  // Last, once every mount point exists: the root read-only (the mounts on it keep their own flags).
  args.push('--remount-ro', '/');
  args.push('--chdir', cwd, '--', ...firstProcess(spec, command));
  return [...drop, ...args];
}

/** 127.0.0.1:3128 listening, as /proc/net/tcp shows it (hex address:port, state 0A). */
const PROXY_LISTENING = '0100007F:0C38 00000000:0000 0A';

/**
 * What runs first inside the sandbox. Without a way out, the step itself. With one, a relay from 127.0.0.1:3128 to
 * the egress socket, then the step, once the relay listens: socat when the system has it (a few milliseconds),
 * else the node init script (sandbox-init.mjs). Either way the relay is a child of the step's process and dies
 * with the sandbox.
 */
function firstProcess(spec: SandboxSpec, command: string[]): string[] {
  if (!spec.egressSocket) return command;
  if (SOCAT && spec.relay !== 'node') {
    const relay = `${SOCAT} TCP-LISTEN:${INSIDE.proxyPort},bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:${INSIDE.socket} 2>/dev/null &`;
    const ready = `i=0; while [ $i -lt 500 ] && ! grep -q '${PROXY_LISTENING}' /proc/net/tcp; do sleep 0.01; i=$((i+1)); done`;
    return ['/bin/sh', '-c', `${relay} ${ready}; exec "$@"`, 'init', ...command];
  }
  return [process.execPath, INSIDE.init, INSIDE.socket, ...command];
}

const SOCAT = ['/usr/bin/socat', '/bin/socat'].find((p) => existsSync(p));

/** The environment a sandboxed step gets on top of its own: proxy variables, when it has a way out. */
export function proxyEnv(): Record<string, string> {
  const url = `http://127.0.0.1:${INSIDE.proxyPort}`;
  return {
    HTTP_PROXY: url,
    HTTPS_PROXY: url,
    http_proxy: url,
    https_proxy: url,
    npm_config_proxy: url,
    npm_config_https_proxy: url,
    NO_PROXY: 'localhost,127.0.0.1',
    no_proxy: 'localhost,127.0.0.1',
  };
}

/**
 * The build's directory (under BUILD_DIR, which only needs to be traversable, mode 0711, so the build's user can
 * reach what is mounted for it without listing other builds): /work (owned by the build's user), home, a copy of
 * the init script, and the generated /etc files.
 */
export async function prepareSandboxRoot(buildDir: string, uid: number): Promise<{ root: string; etcDir: string; initScript: string }> {
  const root = path.join(buildDir, 'root');
  const etcDir = path.join(buildDir, 'etc');
  await mkdir(path.join(root, 'home'), { recursive: true });
  await mkdir(etcDir, { recursive: true });
  await chmod(buildDir, 0o711);
  await chmod(etcDir, 0o755);
  const initScript = path.join(buildDir, 'init.mjs');
  await copyFile(INIT_SCRIPT, initScript);
  await chmod(initScript, 0o644);
  await writeFile(path.join(etcDir, 'passwd'), `root:x:0:0:root:/root:/usr/sbin/nologin\nbuild:x:${uid}:${uid}:build:${INSIDE.home}:/bin/sh\n`);
  await writeFile(path.join(etcDir, 'group'), `root:x:0:\nbuild:x:${uid}:\n`);
  await writeFile(path.join(etcDir, 'hosts'), '127.0.0.1 localhost build\n::1 localhost\n');
  await writeFile(path.join(etcDir, 'nsswitch.conf'), 'passwd: files\ngroup: files\nhosts: files\n');
  // Mount points for what comes from the host (a read-only /etc cannot get new entries once mounted).
  for (const p of ETC_FROM_HOST) {
    if (!existsSync(p)) continue;
    const point = path.join(etcDir, path.basename(p));
    if (statSync(p).isDirectory()) await mkdir(point, { recursive: true });
    else await writeFile(point, '');
  }
  if (process.getuid?.() === 0) {
    await chown(root, uid, uid);
    await chown(path.join(root, 'home'), uid, uid);
  }
  return { root, etcDir, initScript };
}
