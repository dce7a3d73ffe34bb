import http from 'node:http';

/**
 * One HTTP request over a keep-alive agent of `maxSockets`, its whole answer read: the benches' own API calls.
 * `destroy()` closes the agent's sockets.
 */
export function keepAliveRequester(maxSockets: number) {
  const agent = new http.Agent({ keepAlive: true, maxSockets });
  return Object.assign(request, { destroy: () => agent.destroy() });
  function request(
    base: string,
    method: string,
    p: string,
    headers: Record<string, string>,
    body?: string,
  ): Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }> {
    return new Promise((resolve, reject) => {
      const req = http.request(`${base}${p}`, { method, headers, agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString(), headers: res.headers }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    });
  }
}
