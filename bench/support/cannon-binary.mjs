// autocannon with a binary body (its CLI reads `-i` files as UTF-8 text, which breaks gzip): one run, the result's
// JSON on stdout. Usage: node cannon-binary.mjs '<json: { url, bodyFile, headers, connections, duration }>'
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';

const o = JSON.parse(process.argv[2]);
const result = await autocannon({
  url: o.url,
  method: 'POST',
  body: readFileSync(o.bodyFile),
  headers: o.headers,
  connections: o.connections,
  duration: o.duration,
});
process.stdout.write(JSON.stringify(result));
