import autocannon from 'autocannon';

/**
 * autocannon with a header of its own per request (`--unique <header>`: a counter), for routes that deduplicate on it
 * (inbound provider deliveries). Run as a child process by the benches, so the load generator does not share the
 * event loop of what it measures: `tsx bench/support/cannon-unique.ts '<json options>'`. Prints autocannon's result.
 */
const o = JSON.parse(process.argv[2]!) as {
  url: string;
  connections: number;
  durationSec: number;
  headers: Record<string, string>;
  body: string;
  unique: string;
};
let n = 0;
const instance = autocannon(
  {
    url: o.url,
    connections: o.connections,
    duration: o.durationSec,
    method: 'POST',
    headers: o.headers,
    body: o.body,
    requests: [{ setupRequest: (req) => ({ ...req, headers: { ...req.headers, [o.unique]: `bench-${process.pid}-${n++}` } }) }],
  },
  (err, result) => {
    if (err) throw err;
    process.stdout.write(JSON.stringify(result));
  },
);
void instance;
