import { describe, expect, it } from 'vitest';
import type { StampedErrorEvent } from '../../../schemas/error-event.ts';
import { facetTagsOf } from '../facet-tags.ts';
import { contextsOfUserAgent, createContextStep } from './context-step.ts';
import { createScrubStep, scrubContext } from './scrub-step.ts';

const FIREFOX = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:121.0) Gecko/20100101 Firefox/121.0';
const base = (over: Partial<StampedErrorEvent> = {}): StampedErrorEvent => ({
  eventId: 'e',
  name: 'E',
  message: 'm',
  stack: '',
  runtime: 'browser',
  truncated: [],
  ...over,
});
const incoming = (event: StampedErrorEvent) => ({ projectId: 'p', originHost: 'a.example', receivedAt: 1, event });

describe('contexts from the User-Agent (issue 40)', () => {
  const step = createContextStep();

  it('parses browser, os and device (ua-parser-js), remembering each User-Agent', () => {
    expect(contextsOfUserAgent(FIREFOX)).toEqual({
      browser: { name: 'Firefox', version: '121.0' },
      os: { name: 'Windows', version: '10' },
      device: { family: 'desktop' },
    });
    expect(contextsOfUserAgent(FIREFOX)).toBe(contextsOfUserAgent(FIREFOX));
    expect(contextsOfUserAgent('curl/8.0')).toEqual({});
  });

  it("fills only the contexts the SDK did not send, from the event's header before the batch's; not for a server event", () => {
    const withOs = base({ context: { contexts: { os: { name: 'Mine' } } } });
    expect(step(incoming(withOs), FIREFOX).event.context!.contexts).toEqual({
      os: { name: 'Mine' },
      browser: { name: 'Firefox', version: '121.0' },
      device: { family: 'desktop' },
    });
    const iphone = 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1';
    const own = base({ context: { request: { headers: { 'user-agent': iphone } } } });
    expect(step(incoming(own), FIREFOX).event.context!.contexts!.browser).toEqual({ name: 'Mobile Safari', version: '17.1' });
    const server = incoming(base({ runtime: 'node' }));
    expect(step(server, FIREFOX)).toBe(server);
    const plain = incoming(base());
    expect(step(plain, undefined)).toBe(plain);
  });
});

describe('facet tags (issue 40)', () => {
  it('derives browser, os, device, release (else the deploy), environment, url, level, runtime over the event tags', () => {
    const e = base({
      gitSha: 'abc1234',
      path: '/p',
      context: { tags: { browser: 'x', custom: 'y' }, contexts: { browser: { name: 'Chrome' } }, request: { url: 'https://a.example/x?q=1#h' } },
    });
    expect(facetTagsOf({ ...incoming(e), fingerprint: 'f', groupId: 'g', environment: 'preview' })).toEqual({
      custom: 'y',
      browser: 'Chrome',
      release: 'abc1234',
      environment: 'preview',
      url: 'https://a.example/x',
      level: 'error',
      runtime: 'browser',
    });
  });
});

describe('scrubbing the context (issue 40)', () => {
  it('scrubs breadcrumbs, tags (values and key names), contexts, request, user, release; keeps e-mail and IP', () => {
    const c = scrubContext({
      breadcrumbs: [{ timestamp: 1, category: 'x', message: 'Authorization: Bearer abcdefghijkl', data: { token: 'tok', sk_live_abcdefghijklmnop: 1 } }],
      tags: { secret: 'v', ok: 'ghp_abcdefghijklmnopqrstuvwxyz' },
      contexts: { app: { api_key: 'k' } },
      request: { url: 'https://u:p@a.example/x?password=pw', headers: { referer: 'https://a.example/?token=t' } },
      user: { id: 'u1', email: 'ann@example.com', ipAddress: '203.0.113.9', username: 'password=pw' },
      release: 'r AKIAABCDEFGHIJKLMNOP',
    });
    expect(c.breadcrumbs![0]).toEqual({
      timestamp: 1,
      category: 'x',
      message: 'Authorization: [Filtered] [Filtered]',
      data: { token: '[Filtered]', '[Filtered]': 1 },
    });
    expect(c.tags).toEqual({ secret: '[Filtered]', ok: '[Filtered]' });
    expect(c.contexts).toEqual({ app: { api_key: '[Filtered]' } });
    expect(c.request).toEqual({ url: 'https://[Filtered]@a.example/x?password=[Filtered]', headers: { referer: 'https://a.example/?token=[Filtered]' } });
    expect(c.user).toEqual({ id: 'u1', email: 'ann@example.com', ipAddress: '203.0.113.9', username: 'password=[Filtered]' });
    expect(c.release).toBe('r [Filtered]');
  });

  it('the scrub step carries the context, and an event without one gets none', () => {
    const step = createScrubStep();
    const out = step(incoming(base({ context: { tags: { password: 'x' } } })));
    expect(out.kind === 'ok' && out.value.event.context).toEqual({ tags: { password: '[Filtered]' } });
    const plain = step(incoming(base()));
    expect(plain.kind === 'ok' && 'context' in plain.value.event).toBe(false);
  });
});
