import http from 'node:http';
import zlib from 'node:zlib';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { acquireChdbSession } from '../../platform/adapters/analytical/chdb-store.ts';

/**
 * ClickHouse's HTTP interface served from chDB (the same engine, in-process), so tests exercise the
 * @clickhouse/client adapter over real HTTP where no ClickHouse server is configured.
 *
 * What it serves, as ClickHouse does: `/ping`; GET or POST with the query in `?query=`, in the body,
 * or both (URL query + body, the way INSERT data travels); multipart/form-data bodies (query and
 * `param_*` parts); `param_<name>` values bound by the engine in ClickHouse's escaped text form;
 * `default_format` and trailing `FORMAT` clauses; settings as URL parameters (names the engine does not
 * know, like the HTTP-layer ones, are ignored); gzip/deflate request bodies. Errors answer 500 with
 * ClickHouse's `Code: N. DB::Exception: ... (TYPE)` body and `X-ClickHouse-Exception-Code`.
 *
 * One chDB session serves every request, and settings and parameters are applied with SET (chDB has
 * no per-query settings API), so requests run one at a time and each one's settings are reset after it.
 */

/** URL parameters that belong to the HTTP layer, not to the query's settings. */
const HTTP_PARAMS = new Set([
  'query',
  'query_id',
  'default_format',
  'database',
  'session_id',
  'session_timeout',
  'session_check',
  'role',
  'user',
  'password',
  'quota_key',
  'compress',
  'decompress',
  'buffer_size',
  'wait_end_of_query',
  'enable_http_compression',
  'http_zlib_compression_level',
  'send_progress_in_http_headers',
]);

const READ_ONLY_STATEMENT = /^(SELECT|WITH|SHOW|DESC|DESCRIBE|EXISTS|EXPLAIN)\b/i;

class HttpQueryError extends Error {
  constructor(
    readonly code: number,
    readonly type: string,
    message: string,
  ) {
    super(`Code: ${code}. DB::Exception: ${message}. (${type})`);
  }
}

/** A ClickHouse string literal holding `raw` exactly. */
function literal(raw: string): string {
  return `'${raw.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** Strip leading whitespace and comments so the statement's first keyword can be read. */
function statementHead(sql: string): string {
  let s = sql;
  for (;;) {
    const t = s.replace(/^\s+/, '');
    if (t.startsWith('--')) s = t.slice(t.indexOf('\n') === -1 ? t.length : t.indexOf('\n'));
    else if (t.startsWith('/*')) s = t.slice(t.indexOf('*/') === -1 ? t.length : t.indexOf('*/') + 2);
    else return t;
  }
}

function decodeBody(buf: Buffer, encoding: string | undefined): Buffer {
  switch ((encoding ?? '').toLowerCase()) {
    case '':
    case 'identity':
      return buf;
    case 'gzip':
      return zlib.gunzipSync(buf);
    case 'deflate':
      return zlib.inflateSync(buf);
    case 'br':
      return zlib.brotliDecompressSync(buf);
    default:
      throw new HttpQueryError(1002, 'UNKNOWN_EXCEPTION', `Unsupported Content-Encoding: ${encoding}`);
  }
}

/** Minimal multipart/form-data: named text parts (what @clickhouse/client sends for large params). */
function parseMultipart(body: Buffer, contentType: string): Map<string, string> {
  const m = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(contentType);
  if (!m) throw new HttpQueryError(1002, 'UNKNOWN_EXCEPTION', 'multipart body without boundary');
  const boundary = `--${m[1] ?? m[2]}`;
  const parts = new Map<string, string>();
  for (const chunk of body.toString('utf8').split(boundary)) {
    const sep = chunk.indexOf('\r\n\r\n');
    if (sep === -1) continue;
    const head = chunk.slice(0, sep);
    const name = /name="([^"]*)"/i.exec(head)?.[1];
    if (!name) continue;
    parts.set(name, chunk.slice(sep + 4).replace(/\r\n$/, ''));
  }
  return parts;
}

interface Request {
  method: string;
  statement: string;
  data: string;
  params: Map<string, string>;
  settings: Map<string, string>;
  defaultFormat?: string;
  database?: string;
  queryId: string;
}

export async function startChdbHttpServer(opts: { dataDir: string; port?: number }): Promise<{ url: string; stop(): Promise<void> }> {
  const handle = await acquireChdbSession(opts.dataDir);
  const { session } = handle;
  const known = new Set((await session.queryAsync('SELECT name FROM system.settings', { format: 'TabSeparated' })).text().split('\n').filter(Boolean));
  const version = (await session.queryAsync('SELECT version()', { format: 'TabSeparated' })).text().trim();

  // One request at a time: SET changes the shared session until it is reset.
  let queue: Promise<unknown> = Promise.resolve();
  const exclusive = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = queue.then(fn, fn);
    queue = run.catch(() => undefined);
    return run;
  };

  function parseRequest(method: string, url: URL, rawBody: Buffer, contentType: string): Request {
    const params = new Map<string, string>();
    const settings = new Map<string, string>();
    let urlQuery = '';
    let bodyText = rawBody.toString('utf8');
    let defaultFormat: string | undefined;
    let database: string | undefined;
    let queryId: string = randomUUID();
    const take = (key: string, value: string) => {
      if (key.startsWith('param_')) params.set(key.slice('param_'.length), value);
      else if (key === 'query') urlQuery = value;
      else if (key === 'default_format') defaultFormat = value;
      else if (key === 'database') database = value;
      else if (key === 'query_id') queryId = value || queryId;
      else if (!HTTP_PARAMS.has(key) && known.has(key)) settings.set(key, value);
    };
    for (const [k, v] of url.searchParams) take(k, v);
    if (contentType.toLowerCase().startsWith('multipart/form-data')) {
      const parts = parseMultipart(rawBody, contentType);
      bodyText = '';
      for (const [k, v] of parts) take(k, v);
    }
    // As ClickHouse does: the URL's query comes first and the body (INSERT data, say) follows it.
    const statement = urlQuery || bodyText;
    const data = urlQuery ? bodyText : '';
    if (!statement.trim()) throw new HttpQueryError(62, 'SYNTAX_ERROR', 'Empty query');
    return { method, statement, data, params, settings, defaultFormat, database, queryId };
  }

  async function execute(req: Request): Promise<{ body: Buffer; format: string; summary: Record<string, string> }> {
    const head = statementHead(req.statement);
    const isInsert = /^INSERT\b/i.test(head);
    if (req.method === 'GET' && !READ_ONLY_STATEMENT.test(head)) {
      throw new HttpQueryError(
        164,
        'READONLY',
        'Cannot execute query in readonly mode. For queries over HTTP, method GET implies readonly. You should use method POST for modifying queries',
      );
    }
    // A parameter the request did not send must not be served from an earlier request's SET.
    for (const m of req.statement.matchAll(/\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*:/g)) {
      if (!req.params.has(m[1])) throw new HttpQueryError(456, 'UNKNOWN_QUERY_PARAMETER', `Substitution \`${m[1]}\` is not set`);
    }
    const clause = /\bFORMAT\s+([A-Za-z0-9_]+)\s*;?\s*$/i.exec(req.statement)?.[1];
    const format = isInsert ? (req.defaultFormat ?? 'TabSeparated') : (clause ?? req.defaultFormat ?? 'TabSeparated');
    const sql = req.data ? `${req.statement}\n${req.data}` : req.statement;

    return exclusive(async () => {
      const sets: string[] = [];
      for (const [k, v] of req.settings) sets.push(`${k} = ${literal(v)}`);
      for (const [k, v] of req.params) sets.push(`param_${k} = ${literal(v)}`);
      const useDb = req.database && req.database !== 'default';
      try {
        if (sets.length) await session.queryAsync(`SET ${sets.join(', ')}`);
        if (useDb) await session.queryAsync(`USE ${'`' + req.database!.replace(/`/g, '``') + '`'}`);
        const started = process.hrtime.bigint();
        const result = await session.queryAsync(sql, { format });
        const elapsedNs = String(process.hrtime.bigint() - started);
        const body = Buffer.from(result.bytes());
        const rows = String(result.rowsRead);
        const bytes = String(result.bytesRead);
        const summary = isInsert
          ? {
              read_rows: rows,
              read_bytes: bytes,
              written_rows: rows,
              written_bytes: bytes,
              total_rows_to_read: '0',
              result_rows: rows,
              result_bytes: bytes,
              elapsed_ns: elapsedNs,
            }
          : {
              read_rows: rows,
              read_bytes: bytes,
              written_rows: '0',
              written_bytes: '0',
              total_rows_to_read: rows,
              result_rows: '0',
              result_bytes: String(body.length),
              elapsed_ns: elapsedNs,
            };
        return { body, format, summary };
      } finally {
        if (useDb) await session.queryAsync('USE default').catch(() => undefined);
        if (req.settings.size) {
          await session.queryAsync(`SET ${[...req.settings.keys()].map((k) => `${k} = DEFAULT`).join(', ')}`).catch(() => undefined);
        }
      }
    });
  }

  const sendError = (res: http.ServerResponse, err: unknown, queryId: string) => {
    let text = err instanceof Error ? err.message : String(err);
    let code = /^Code: (\d+)\./.exec(text)?.[1];
    if (!code) {
      code = '1002';
      text = `Code: 1002. DB::Exception: ${text}. (UNKNOWN_EXCEPTION)`;
    }
    const body = `${text} (version ${version})\n`;
    res.writeHead(500, {
      'Content-Type': 'text/plain; charset=UTF-8',
      'X-ClickHouse-Exception-Code': code,
      'X-ClickHouse-Query-Id': queryId,
      'X-ClickHouse-Server-Display-Name': 'chdb-http',
      'Content-Length': Buffer.byteLength(body),
    });
    res.end(body);
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('error', () => res.destroy());
    req.on('end', async () => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const method = req.method ?? 'GET';
      if ((url.pathname === '/ping' || url.pathname === '/') && !url.searchParams.has('query') && (method === 'GET' || method === 'HEAD')) {
        res.writeHead(200, { 'Content-Type': 'text/plain; charset=UTF-8', 'Content-Length': 4 });
        res.end(method === 'HEAD' ? undefined : 'Ok.\n');
        return;
      }
      let queryId: string = randomUUID();
      try {
        const body = decodeBody(Buffer.concat(chunks), req.headers['content-encoding']);
        const parsed = parseRequest(method, url, body, req.headers['content-type'] ?? '');
        queryId = parsed.queryId;
        const out = await execute(parsed);
        const json = /^JSON/i.test(out.format);
        res.writeHead(200, {
          'Content-Type': json ? 'application/json; charset=UTF-8' : 'text/plain; charset=UTF-8',
          'X-ClickHouse-Query-Id': queryId,
          'X-ClickHouse-Format': out.format,
          'X-ClickHouse-Timezone': 'UTC',
          'X-ClickHouse-Server-Display-Name': 'chdb-http',
          'X-ClickHouse-Summary': JSON.stringify(out.summary),
          'Content-Length': out.body.length,
        });
        res.end(out.body);
      } catch (err) {
        sendError(res, err, queryId);
      }
    });
  });
  // Idle keep-alive sockets of the client outlive its socket TTL (2.5 s) by this margin.
  server.keepAliveTimeout = 10_000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    async stop() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await queue;
      handle.release();
    },
  };
}
