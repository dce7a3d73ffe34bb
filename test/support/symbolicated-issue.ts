import type { SymbolicatedFrame } from '../../schemas/symbolicated-frame.ts';
import { sourceMapsRepository } from '../../domain/source-maps/source-maps-repository.ts';
import type { Queryable } from '../../platform/ports/relational-store.ts';
import { newId } from '../../platform/tokens.ts';

/**
 * An issue as the processor stores it once source maps resolved its frames (issue 37), written straight into the
 * database for the API's and the console's tests (the processor's own tests make them from real maps): a Vite-built
 * storefront's TypeError whose newest sample carries resolved frames with context lines, library frames, and one
 * unresolved frame for every reason. And the deploy whose build kept the maps, with its maps listed.
 */

/** A ready production deploy with these maps kept from its build (content is a placeholder: never shown). */
export async function seedDeployWithMaps(
  db: Queryable,
  projectId: string,
  maps: Array<{ mapName: string; servedPath?: string; debugId?: string; bytes: number }> = DEFAULT_MAPS,
): Promise<string> {
  const deployId = newId('dep_');
  await db.query(
    `INSERT INTO deploys (id, project_id, branch, git_sha, environment, status, trigger_kind, created_at, started_at, finished_at)
     VALUES ($1, $2, 'main', '8e1d7f0a3c2b4d5e6f708192a3b4c5d6e7f80912', 'production', 'ready', 'hook', now() - interval '3 minutes', now() - interval '3 minutes', now() - interval '2 minutes')`,
    [deployId, projectId],
  );
  await sourceMapsRepository.insert(
    db,
    { projectId, deployId },
    maps.map((m) => ({ mapName: m.mapName, servedPath: m.servedPath, debugId: m.debugId, content: Buffer.alloc(m.bytes, 32) })),
  );
  return deployId;
}

export const DEFAULT_MAPS = [
  { mapName: 'assets/index-3f9a2c1b.js.map', servedPath: '/assets/index-3f9a2c1b.js', debugId: 'c1f0e2d3-4b5a-4c6d-8e7f-90a1b2c3d4e5', bytes: 1_843_211 },
  { mapName: 'assets/vendor-0b1c2d3e.js.map', servedPath: '/assets/vendor-0b1c2d3e.js', bytes: 4_120_877 },
  { mapName: 'assets/checkout-5d6e7f80.js.map', servedPath: '/assets/checkout-5d6e7f80.js', debugId: '0a9b8c7d-6e5f-4a3b-9c2d-1e0f9a8b7c6d', bytes: 96_402 },
];

const HOST = 'https://shop.example.com';

/** The frames of the newest occurrence: top first, as a stack reads. */
export function storefrontFrames(deployId: string): SymbolicatedFrame[] {
  const byDeploy = (mapName: string) => ({ status: 'resolved' as const, match: 'deploy' as const, deployId, mapName });
  return [
    {
      minified: { fn: 'r', file: `${HOST}/assets/index-3f9a2c1b.js`, line: 1, col: 18433 },
      original: { fn: 'lineTotal', file: 'src/cart/totals.ts', line: 14, col: 27 },
      context: {
        firstLine: 9,
        lines: [
          "import type { CartLine, Product } from '../types';",
          '',
          '/** A line of the cart: its quantity times the price of the product it names. */',
          'export function lineTotal(line: CartLine, products: Map<string, Product>): number {',
          '  const product = products.get(line.productId);',
          '  return line.quantity * product.price;',
          '}',
          '',
          'export function cartTotal(lines: CartLine[], products: Map<string, Product>): number {',
          '  return lines.map((l) => lineTotal(l, products)).reduce((a, b) => a + b, 0);',
          '}',
        ],
        errorIndex: 5,
      },
      inApp: true,
      resolution: byDeploy('assets/index-3f9a2c1b.js.map'),
    },
    {
      minified: { fn: 'Array.map', file: '<anonymous>' },
      inApp: false,
      resolution: { status: 'unresolved', reason: 'not_a_url' },
    },
    {
      minified: { fn: 'n', file: `${HOST}/assets/index-3f9a2c1b.js`, line: 1, col: 18502 },
      original: { fn: 'cartTotal', file: 'src/cart/totals.ts', line: 18, col: 16 },
      context: {
        firstLine: 13,
        lines: [
          '  const product = products.get(line.productId);',
          '  return line.quantity * product.price;',
          '}',
          '',
          'export function cartTotal(lines: CartLine[], products: Map<string, Product>): number {',
          '  return lines.map((l) => lineTotal(l, products)).reduce((a, b) => a + b, 0);',
          '}',
        ],
        errorIndex: 5,
      },
      inApp: true,
      resolution: byDeploy('assets/index-3f9a2c1b.js.map'),
    },
    {
      minified: { fn: 'Ce', file: `${HOST}/assets/index-3f9a2c1b.js`, line: 1, col: 20117 },
      original: { fn: 'CartSummary', file: 'src/components/CartSummary.tsx', line: 9, col: 17 },
      context: {
        firstLine: 4,
        lines: [
          'export function CartSummary({ lines }: { lines: CartLine[] }) {',
          '  const products = useProducts();',
          '  // <script>alert("not markup")</script> stays text',
          '  if (!lines.length) return <p class="empty">Your cart is empty.</p>;',
          '',
          '  const total = cartTotal(lines, products);',
          '  return (',
          '    <div className="cart-summary">',
          '      <span>Total</span> <strong>{formatPrice(total)}</strong>',
          '    </div>',
          '  );',
        ],
        errorIndex: 5,
      },
      inApp: true,
      resolution: {
        status: 'resolved',
        match: 'debug_id',
        deployId,
        mapName: 'assets/index-3f9a2c1b.js.map',
        debugId: 'c1f0e2d3-4b5a-4c6d-8e7f-90a1b2c3d4e5',
      },
    },
    {
      minified: { fn: 'Xo', file: `${HOST}/assets/vendor-0b1c2d3e.js`, line: 1, col: 40211 },
      original: { fn: 'renderWithHooks', file: 'node_modules/react-dom/cjs/react-dom.production.js', line: 5290, col: 21 },
      context: {
        firstLine: 5288,
        lines: [
          '  var prevDispatcher = ReactSharedInternals.H;',
          '  ReactSharedInternals.H = dispatcher;',
          '  var children = Component(props, secondArg);',
          '  return children;',
        ],
        errorIndex: 2,
      },
      inApp: false,
      resolution: byDeploy('assets/vendor-0b1c2d3e.js.map'),
    },
    {
      minified: { fn: 'Hu', file: `${HOST}/assets/vendor-0b1c2d3e.js`, line: 1, col: 61870 },
      original: { fn: 'beginWork', file: 'node_modules/react-dom/cjs/react-dom.production.js', line: 7721, col: 18 },
      inApp: false,
      resolution: byDeploy('assets/vendor-0b1c2d3e.js.map'),
    },
    {
      minified: { fn: 't', file: `${HOST}/assets/index-3f9a2c1b.js`, line: 7, col: 1 },
      inApp: true,
      resolution: { status: 'unresolved', reason: 'line_out_of_range' },
    },
    {
      minified: { fn: 'o', file: `${HOST}/assets/legacy-55aa0c3d.js`, line: 1, col: 920 },
      inApp: true,
      resolution: { status: 'unresolved', reason: 'map_refused' },
    },
    {
      minified: { fn: 'a', file: `${HOST}/assets/charts-77c0ffee.js`, line: 1, col: 5120 },
      inApp: true,
      resolution: { status: 'unresolved', reason: 'busy' },
    },
    {
      minified: { fn: 'e', file: 'https://cdn.example.net/widget.min.js', line: 2, col: 118 },
      inApp: true,
      resolution: { status: 'unresolved', reason: 'no_map' },
    },
  ];
}

const NAME = 'TypeError';
const MESSAGE = "Cannot read properties of undefined (reading 'price')";

/** A V8 stack of these frames: the original positions (or the minified where unresolved), or as the client sent it. */
export function stackOf(frames: SymbolicatedFrame[], which: 'original' | 'minified', header = `${NAME}: ${MESSAGE}`): string {
  const line = (p: SymbolicatedFrame['minified']) =>
    `    at ${p.fn ? `${p.fn} (` : ''}${p.file}${p.line !== undefined ? `:${p.line}` : ''}${p.col !== undefined ? `:${p.col}` : ''}${p.fn ? ')' : ''}`;
  return [header, ...frames.map((f) => line(which === 'original' ? (f.original ?? f.minified) : f.minified))].join('\n');
}

/**
 * An unresolved production issue whose samples are as given, newest first (the group's stack is the newest's, as the
 * processor writes it). Returns its id.
 */
export async function seedIssue(
  db: Queryable,
  projectId: string,
  samples: Array<Record<string, unknown>>,
  opts: { name?: string; message?: string; culprit?: string | null } = {},
): Promise<string> {
  const groupId = newId('grp_');
  const newest = samples[0] ?? {};
  await db.query(
    `INSERT INTO error_groups (id, project_id, fingerprint, name, message, stack, culprit, status, count, env_counts, first_seen, last_seen, sample_batches)
     VALUES ($1, $2, $3, $4, $5, $6, $7, 'unresolved', $8, $9, now() - interval '2 hours', now() - interval '1 minute', 1)`,
    [
      groupId,
      projectId,
      newId('fp_'),
      opts.name ?? NAME,
      opts.message ?? MESSAGE,
      typeof newest.stack === 'string' ? newest.stack : '',
      opts.culprit ?? null,
      samples.length,
      JSON.stringify({ production: samples.length }),
    ],
  );
  await db.query('INSERT INTO error_group_samples (group_id, slot, seq, samples) VALUES ($1, 0, 1, $2::jsonb)', [groupId, JSON.stringify(samples)]);
  return groupId;
}

/** A sample as the processor keeps it, from these frames (`frames: null`: stored before issue 37, plain stack only). */
export function sampleWith(frames: SymbolicatedFrame[] | null, at = new Date(Date.now() - 60_000)): Record<string, unknown> {
  const base = {
    eventId: newId('evt_'),
    receivedAt: at.toISOString(),
    environment: 'production',
    name: NAME,
    message: MESSAGE,
    runtime: 'browser',
    originHost: 'shop.example.com',
    path: '/cart',
  };
  if (!frames) return { ...base, stack: stackOf(storefrontFrames('dep_none'), 'minified') };
  const resolved = frames.some((f) => f.resolution.status === 'resolved');
  return {
    ...base,
    stack: stackOf(frames, resolved ? 'original' : 'minified'),
    ...(resolved ? { minifiedStack: stackOf(frames, 'minified') } : {}),
    frames,
  };
}

/** The storefront's issue with its deploy: the newest sample symbolicated, an older one stored before issue 37. */
export async function seedStorefrontIssue(db: Queryable, projectId: string): Promise<{ groupId: string; deployId: string; frames: SymbolicatedFrame[] }> {
  const deployId = await seedDeployWithMaps(db, projectId);
  const frames = storefrontFrames(deployId);
  const groupId = await seedIssue(db, projectId, [sampleWith(frames), sampleWith(null, new Date(Date.now() - 3_600_000))], {
    culprit: 'at lineTotal (src/cart/totals.ts:14:27)',
  });
  return { groupId, deployId, frames };
}
