// autocannon over a fixed sequence of requests (each connection cycles through it in order, so the mix is exact):
// one run, the result's JSON on stdout. Usage: node cannon-mix.mjs '<json: { url, requestsFile, connections, duration }>'
// where requestsFile holds [{ path, headers, body (base64) }].
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';

const o = JSON.parse(process.argv[2]);
const requests = JSON.parse(readFileSync(o.requestsFile, 'utf8')).map((r) => ({
  method: 'POST',
  path: r.path,
  headers: r.headers,
  body: Buffer.from(r.body, 'base64'),
}));
const result = await autocannon({ url: o.url, requests, connections: o.connections, duration: o.duration });
process.stdout.write(JSON.stringify(result));
