import http from 'node:http';

/**
 * One request over real HTTP with exactly the headers given (a Host of our choosing included, which fetch may not
 * set), the body's length declared; fails the test if no answer comes within 15 s.
 */
export function httpRequest(
  base: string,
  method: string,
  url: string,
  headers: Record<string, string>,
  body?: string | Buffer,
): Promise<{ status: number; type: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${base}${url}`,
      { method, headers: body !== undefined ? { ...headers, 'content-length': String(Buffer.byteLength(body)) } : headers },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, type: String(res.headers['content-type'] ?? ''), body: text }));
      },
    );
    req.setTimeout(15_000, () => req.destroy(new Error(`no answer: ${method} ${url}`)));
    req.on('error', reject);
    req.end(body);
  });
}
