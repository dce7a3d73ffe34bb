import type { Config } from '../platform/config.ts';
import type { Logger } from '../platform/logger.ts';
import type { OutboundUrlGuard } from '../platform/ports/outbound-url-guard.ts';
import type { BuildIsolation } from './build-run.ts';
import { probeBuildCgroups, type CgroupHost } from './sandbox/build-cgroup.ts';
import { probeSandbox } from './sandbox/sandbox.ts';

/** How every build of this builder is fenced in (build-run.ts), from the configuration. */
export function buildIsolationOf(config: Config, guard: OutboundUrlGuard, cgroupHost?: CgroupHost): BuildIsolation {
  return {
    sandbox: config.BUILD_SANDBOX === 'on',
    network: config.BUILD_NETWORK,
    uid: config.BUILD_UID,
    memoryBytes: config.BUILD_MEMORY_MB * 1024 * 1024,
    pids: config.BUILD_PIDS,
    cpuSeconds: config.BUILD_CPU_SECONDS,
    diskBytes: config.BUILD_DISK_MB * 1024 * 1024,
    tmpBytes: config.BUILD_TMP_MB * 1024 * 1024,
    allowUnlimited: config.BUILD_ALLOW_UNLIMITED,
    cgroupHost,
    artifact: { maxBytes: config.ARTIFACT_MAX_BYTES, maxFiles: config.ARTIFACT_MAX_FILES, maxFileBytes: config.ARTIFACT_MAX_FILE_BYTES },
    guard,
  };
}

/**
 * What this machine lets the builder enforce (cgroup limits, the bubblewrap sandbox), said at every start, on stderr
 * as well as in the log, whatever LOG_LEVEL is: a builder that will fail every build says why before the first one.
 */
export async function reportBuildEnvironment(config: Config, log: Logger, probes: { bwrap?: string; cgroupHost?: CgroupHost } = {}): Promise<void> {
  const cgroups = await probeBuildCgroups(probes.cgroupHost);
  const limits = cgroups.ok ? `cgroup ${cgroups.version} (${cgroups.dir})` : 'none';
  if (!cgroups.ok && config.BUILD_ALLOW_UNLIMITED) {
    log.warn({ why: cgroups.why }, 'BUILD_ALLOW_UNLIMITED=true: builds run without memory or process limits; only for a single-tenant machine');
    process.stderr.write(`WARNING: BUILD_ALLOW_UNLIMITED=true: builds run without memory or process limits (${cgroups.why})\n`);
  } else if (!cgroups.ok) {
    log.error({ why: cgroups.why }, 'build limits cannot be enforced here: every build fails with limits_unavailable');
    process.stderr.write(
      `WARNING: builds' memory and process limits cannot be enforced here, so every deploy fails with limits_unavailable (${cgroups.why}): delegate a cgroup to the service (README, "Builds without limits") or set BUILD_ALLOW_UNLIMITED=true on a single-tenant machine\n`,
    );
  }
  if (config.BUILD_SANDBOX === 'off') {
    log.warn("BUILD_SANDBOX=off: builds run unsandboxed as the service's user; only for a single-tenant machine");
    process.stderr.write("WARNING: BUILD_SANDBOX=off: builds run unsandboxed, as the service's user (single-tenant machines only)\n");
    return;
  }
  const probe = await probeSandbox(config.BUILD_UID, probes.bwrap);
  if (probe.available && (cgroups.ok || config.BUILD_ALLOW_UNLIMITED))
    log.info(
      { sandbox: probe.version, network: config.BUILD_NETWORK, limits },
      cgroups.ok ? 'builds run sandboxed, with memory and process limits' : 'builds run sandboxed, without memory or process limits',
    );
  else if (probe.available) log.info({ sandbox: probe.version }, 'builds can be sandboxed here (but fail with limits_unavailable, above)');
  else {
    log.error({ why: probe.message }, 'builds cannot be sandboxed here: every build fails with sandbox_unavailable');
    process.stderr.write(`WARNING: builds cannot be sandboxed here, so every deploy fails with sandbox_unavailable: ${probe.message}\n`);
  }
}
