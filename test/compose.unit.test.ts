import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { BACKEND_URL, DISTRIBUTED_REQUIRED, loadConfig, ROLE_BACKENDS, type Config } from '../platform/config.ts';
import { TOPICS } from '../schemas/topics.ts';
import { POSTHOG_JS_VERSION, POSTHOG_SCRIPTS } from '../ingest/posthog/posthog-assets.ts';

/**
 * docker-compose.yml cannot run on these machines (no Docker engine), so this keeps it honest:
 * every role gets every variable platform/config.ts requires for it, every value parses, the
 * addresses point at services of the stack, Kafka holds every topic durably, the proxy sends the
 * ingest routes to the edge and the rest to the API, and everything starts in order: each role once the
 * backends it opens are healthy, the proxy once the roles it sends to answer /readyz.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const compose = parse(readFileSync(path.join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
};
interface Service {
  image?: string;
  build?: string | { context: string };
  command?: string[] | string;
  entrypoint?: string[] | string;
  environment?: Record<string, string | number | boolean | null> | string[];
  volumes?: string[];
  ports?: string[];
  depends_on?: string[] | Record<string, { condition?: string }>;
  healthcheck?: { test?: string[] | string };
}
const roles = Object.keys(DISTRIBUTED_REQUIRED) as Array<keyof typeof DISTRIBUTED_REQUIRED>;

function envOf(service: Service): Record<string, string> {
  const env = service.environment ?? {};
  if (Array.isArray(env)) {
    return Object.fromEntries(env.map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]));
  }
  // `${NAME:-default}` is what compose passes when the shell leaves NAME unset: the default.
  const interpolated = (v: string) => v.replace(/\$\{\w+:-([^}]*)\}/g, (_m, fallback: string) => fallback);
  return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v == null ? '' : interpolated(String(v))]));
}

/** The path a health check's `node -e` script fetches on the role's own port (PORT, 8080 in the stack). */
function probeUrl(test: string[]): string | undefined {
  const [cmd, node, flag, script] = test;
  if (cmd !== 'CMD' || node !== 'node' || flag !== '-e' || !script) return undefined;
  return /^fetch\('http:\/\/127\.0\.0\.1:' \+ \(process\.env\.PORT \|\| 8080\) \+ '(\/\w+)'\)\.then\(\(r\) => process\.exit\(r\.ok \? 0 : 1\), \(\) => process\.exit\(1\)\)$/.exec(
    script,
  )?.[1];
}

function hostsOf(key: keyof Config, value: string): string[] {
  if (key === 'KAFKA_BROKERS') return value.split(',').map((b) => b.split(':')[0]);
  return [new URL(value).hostname];
}

describe('docker-compose.yml', () => {
  it.each(roles)('role %s runs the shared image with its role as the command', (role) => {
    const service = compose.services[role];
    expect(service, `service "${role}"`).toBeDefined();
    const context = typeof service.build === 'string' ? service.build : service.build?.context;
    expect(context).toBe('.');
    // node runs the compiled service itself (the image builds it): a stop's SIGTERM reaches it (npx and tsx in
    // between did not pass it on).
    expect(service.command).toEqual(['node', '--enable-source-maps', 'dist/service/main.js', role]);
  });

  it.each(roles)('role %s sets every variable DISTRIBUTED_REQUIRED lists, with values the config accepts', (role) => {
    const env = envOf(compose.services[role]);
    for (const key of DISTRIBUTED_REQUIRED[role]) expect(env[key], `${role}: ${key}`).toBeTruthy();
    const config = loadConfig(env);
    for (const key of DISTRIBUTED_REQUIRED[role]) expect(config[key], `${role}: ${key} after parsing`).toBeTruthy();
  });

  it.each(roles)('role %s points every backend address at a service of the stack', (role) => {
    const env = envOf(compose.services[role]);
    for (const key of DISTRIBUTED_REQUIRED[role]) {
      if (key === 'PUBLIC_BASE_URL') continue;
      for (const host of hostsOf(key, env[key])) expect(Object.keys(compose.services), `${role}: ${key} host ${host}`).toContain(host);
    }
  });

  it('creates every bus topic with three replicas and min.insync.replicas=2', () => {
    const init = compose.services['kafka-init'];
    const script = [init.entrypoint, init.command].flat().join('\n');
    for (const topic of Object.values(TOPICS)) expect(script).toContain(topic);
    expect(script).toMatch(/--replication-factor 3/);
    expect(script).toMatch(/min\.insync\.replicas=2/);
    const brokers = Object.entries(compose.services).filter(([name]) => /^kafka-\d+$/.test(name));
    expect(brokers).toHaveLength(3);
    for (const [, broker] of brokers) {
      const env = envOf(broker);
      expect(env.KAFKA_MIN_INSYNC_REPLICAS).toBe('2');
      expect(env.KAFKA_PROCESS_ROLES).toContain('controller'); // KRaft, no ZooKeeper
    }
  });

  it('serves one base URL: the proxy sends the ingest routes to the edge and the rest to the API', () => {
    const proxy = compose.services.proxy;
    const mount = (proxy.volumes ?? []).find((v) => v.startsWith('./deploy/'));
    expect(mount).toBeDefined();
    const file = path.join(root, mount!.split(':')[0]);
    expect(existsSync(file)).toBe(true);
    const caddy = readFileSync(file, 'utf8');
    const ingestMatcher = /@ingest\s+path\s+([^\n]+)/.exec(caddy)?.[1].trim().split(/\s+/);
    // PostHog's routes with and without the trailing slash, as the edge serves them.
    const posthog = ['/batch/', '/e/', '/i/v0/e/', '/capture/', '/flags/', '/decide/'].flatMap((p) => [p, p.slice(0, -1)]);
    expect(ingestMatcher?.sort()).toEqual(
      ['/api/*', '/service/v1/*', '/v1/analytics/i', '/v1/errors/i', '/v1/errors/i/health', '/v1/flags/i', '/v1/w/*', '/array/*', ...posthog].sort(),
    );
    // Local evaluation's definitions and sentry-cli's source map uploads are the API's, matched before the edge's /api/* and /flags/.
    expect(caddy.indexOf('handle @definitions')).toBeLessThan(caddy.indexOf('handle @ingest'));
    expect(/@definitions\s+path\s+([^\n]+)/.exec(caddy)?.[1].trim().split(/\s+/)).toEqual(['/flags/definitions', '/api/feature_flag/*', '/api/0/*']);
    // Both upstreams over HTTP/1.1: the edge (uWebSockets.js 20.30) does not answer HTTP/1.0.
    const upstream11 = (host: string) => new RegExp(`reverse_proxy ${host}:8080 \\{\\s*transport http \\{\\s*versions 1\\.1\\s*\\}\\s*\\}`);
    expect(caddy).toMatch(new RegExp(`handle @ingest \\{\\s*${upstream11('ingest').source}\\s*\\}`));
    expect(caddy).toMatch(new RegExp(`handle \\{\\s*${upstream11('api').source}\\s*\\}`));
    for (const role of ['ingest', 'api'] as const) expect(envOf(compose.services[role]).PORT).toBe('8080');
    expect(proxy.ports).toContain('8080:8080');
    // posthog-js's own files (ingest/posthog/posthog-assets.ts) go to the edge by name; a site's other /static/ files do not.
    expect(caddy).toMatch(new RegExp(`handle @posthogAssets \\{\\s*${upstream11('ingest').source}\\s*\\}`));
    const assets = new RegExp(/@posthogAssets\s+path_regexp\s+(\S+)/.exec(caddy)![1]!);
    for (const name of POSTHOG_SCRIPTS)
      for (const p of [`/static/${name}`, `/static/${POSTHOG_JS_VERSION}/${name}`, `/static/1.2.3-beta.1/${name}.map`]) expect(assets.test(p), p).toBe(true);
    for (const p of ['/static/js/main.js', '/static/module.js', '/static/array.css', '/static/x/array.js', '/v1/static/array.js'])
      expect(assets.test(p), p).toBe(false);
  });

  it('builders and the API share the deploy artifacts volume at DATA_DIR (the API serves what builders build)', () => {
    for (const role of ['builder', 'api'] as const) {
      const service = compose.services[role]!;
      expect(envOf(service).DATA_DIR, role).toBe('/app/data');
      expect(service.volumes, role).toContain('artifacts:/app/data');
    }
  });

  it('builds from a Dockerfile on Node 20 that compiles the service and starts a role from it, and checks its liveness on /livez', () => {
    const dockerfile = readFileSync(path.join(root, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/^FROM node:20/m);
    expect(dockerfile).toMatch(/^RUN node service\/build\.mjs$/m);
    expect(dockerfile).toMatch(/CMD \["node", "--enable-source-maps", "dist\/service\/main\.js"\]/);
    const probe = /^HEALTHCHECK [^\n]*\\\n\s*CMD (\[.*\])$/m.exec(dockerfile)?.[1];
    expect(probe, 'a HEALTHCHECK in exec form').toBeDefined();
    expect(probeUrl(['CMD', ...JSON.parse(probe!)])).toBe('/livez');
  });

  it.each(roles)('role %s is healthy only when its /readyz answers (node asks: the image has no curl or wget)', (role) => {
    const test = compose.services[role].healthcheck?.test;
    expect(Array.isArray(test) && test[0], `${role}: healthcheck`).toBe('CMD');
    expect(probeUrl(test as string[])).toBe('/readyz');
  });

  it.each(roles)('role %s starts once every backend it opens is healthy (Kafka: once its topics exist)', (role) => {
    const deps = compose.services[role].depends_on;
    expect(deps && !Array.isArray(deps), `${role}: depends_on with conditions`).toBe(true);
    const env = envOf(compose.services[role]);
    const expected: Record<string, string> = {};
    for (const backend of ROLE_BACKENDS[role]) {
      if (backend === 'bus') expected['kafka-init'] = 'service_completed_successfully';
      else expected[hostsOf(BACKEND_URL[backend], env[BACKEND_URL[backend]]!)[0]!] = 'service_healthy';
    }
    const conditions = Object.fromEntries(Object.entries(deps as Record<string, { condition?: string }>).map(([name, d]) => [name, d.condition]));
    expect(conditions).toEqual(expected);
    // A service waited for as healthy must say how it is healthy, or the role would wait forever.
    for (const [name, condition] of Object.entries(expected)) {
      if (condition === 'service_healthy') expect(compose.services[name]?.healthcheck?.test, `${name}: healthcheck`).toBeDefined();
    }
  });

  it('the proxy sends traffic only once the edge and the API are healthy', () => {
    expect(compose.services.proxy.depends_on).toEqual({ ingest: { condition: 'service_healthy' }, api: { condition: 'service_healthy' } });
  });
});
