import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ConfigError, loadConfig } from '../../platform/config.ts';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn, type SignedInUser } from '../../test/support/accounts.ts';

/**
 * Issue 23, "Trying webhooks locally": ALLOW_LOCAL_WEBHOOKS admits http:// and loopback receivers on a developer's
 * machine; private ranges and metadata addresses stay refused; a public https deployment cannot turn it on.
 */
describe('ALLOW_LOCAL_WEBHOOKS', () => {
  it('cannot be set when PUBLIC_BASE_URL is https', () => {
    expect(() => loadConfig({ ALLOW_LOCAL_WEBHOOKS: 'true', PUBLIC_BASE_URL: 'https://service.example.com' })).toThrow(ConfigError);
    expect(loadConfig({ ALLOW_LOCAL_WEBHOOKS: 'true', PUBLIC_BASE_URL: 'http://localhost:8080' }).ALLOW_LOCAL_WEBHOOKS).toBe(true);
  });

  describe('on', () => {
    let t: Awaited<ReturnType<typeof buildTestApi>>;
    let owner: SignedInUser;
    let receiver: http.Server;
    let port: number;
    const received: Array<{ headers: http.IncomingHttpHeaders; body: string }> = [];
    beforeAll(async () => {
      receiver = http.createServer((req, res) => {
        let body = '';
        req.on('data', (c) => (body += c));
        req.on('end', () => {
          received.push({ headers: req.headers, body });
          res.writeHead(200).end();
        });
      });
      await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
      port = (receiver.address() as { port: number }).port;
      t = await buildTestApi({ processors: true, env: { ALLOW_LOCAL_WEBHOOKS: 'true' } });
      owner = await signUpAndSignIn(t.app, t.platform);
    });
    afterAll(async () => {
      await t?.close();
      await new Promise((r) => receiver?.close(r));
    });

    it('accepts an http:// loopback receiver and delivers a signed test event to it; private and metadata addresses stay refused', async () => {
      const p = await createProject(t.app, owner.cookie);
      const create = (url: string) =>
        t.app.inject({
          method: 'POST',
          url: `/v1/projects/${p.slug}/webhooks`,
          headers: sessionHeaders(owner.cookie),
          payload: { url, events: ['webhook.test'] },
        });
      for (const url of ['http://10.0.0.7/hook', 'http://169.254.169.254/latest/meta-data', 'http://192.168.1.1/x']) {
        const refused = await create(url);
        expect(refused.statusCode, url).toBe(400);
        expect(refused.json().error).toBe('url_private_host');
      }
      const ok = await create(`http://127.0.0.1:${port}/hook`);
      expect(ok.statusCode, ok.body).toBe(201);
      // the console's URL hint follows what the deployment takes (issue 39 §5)
      const list = await t.app.inject({ method: 'GET', url: `/v1/projects/${p.slug}/webhooks`, headers: sessionHeaders(owner.cookie) });
      expect(list.json().localReceiversAllowed).toBe(true);
      expect((await t.app.inject({ method: 'POST', url: `/v1/projects/${p.slug}/webhooks/test`, headers: sessionHeaders(owner.cookie) })).statusCode).toBe(202);
      await vi.waitFor(() => expect(received.length).toBe(1), { timeout: 10_000 });
      expect(received[0]!.headers['service-signature']).toBeTruthy();
      expect(JSON.parse(received[0]!.body)).toMatchObject({ event: 'webhook.test' });
    });
  });

  it('off (the default): http:// and loopback receivers are refused', async () => {
    const t = await buildTestApi();
    try {
      const owner = await signUpAndSignIn(t.app, t.platform);
      const p = await createProject(t.app, owner.cookie);
      const res = await t.app.inject({
        method: 'POST',
        url: `/v1/projects/${p.slug}/webhooks`,
        headers: sessionHeaders(owner.cookie),
        payload: { url: 'http://127.0.0.1:9/hook', events: ['webhook.test'] },
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toBe('url_not_https');
      const list = await t.app.inject({ method: 'GET', url: `/v1/projects/${p.slug}/webhooks`, headers: sessionHeaders(owner.cookie) });
      expect(list.json().localReceiversAllowed).toBe(false);
    } finally {
      await t.close();
    }
  });
});
