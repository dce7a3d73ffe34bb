import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import type { Mailer } from '../../ports/mailer.ts';
import { createSmtpMailer } from './smtp-mailer.ts';
import { createFileMailer } from './file-mailer.ts';
import { parseMessage, startSmtpReceiver, type ReceivedMail } from '../../../test/support/smtp-receiver.ts';

const FROM = 'Service Alerts <alerts@example.test>';

interface Harness {
  mailer: Mailer;
  /** Every message delivered so far, as a reader of the adapter's output sees it. */
  delivered(): Promise<Array<Pick<ReceivedMail, 'subject' | 'text'> & { raw: string }>>;
  stop(): Promise<void>;
}

/** The contract every mailer adapter keeps: what is sent arrives whole, readable, addressed. */
function mailerContract(start: () => Promise<Harness>) {
  let h: Harness;
  beforeAll(async () => {
    h = await start();
  });
  afterAll(async () => {
    await h.mailer.close();
    await h.stop();
  });

  it('delivers subject, text and every recipient, with non-ASCII text intact', async () => {
    const subject = `[shop] New error in production: TypeError – ünïcode ${Date.now()}`;
    const text = 'TypeError: Cannot read properties of undefined (reading "id")\nat app.js:10:5\n100% sure: the issue is at https://example.test/issues/grp_1';
    await h.mailer.send({ to: ['ann@example.test', 'bob@example.test'], subject, text });
    const mail = (await h.delivered()).find((m) => m.subject === subject);
    expect(mail).toBeDefined();
    expect(mail!.text).toBe(text);
    expect(mail!.raw).toMatch(/^To: .*ann@example\.test.*bob@example\.test/m);
    expect(mail!.raw).toMatch(/^From: .*alerts@example\.test/m);
    expect(mail!.raw).toMatch(/^Message-ID: </im);
    expect(mail!.raw).toMatch(/^Date: /m);
  });

  it('carries an HTML alternative alongside the text when given one', async () => {
    const subject = `html ${Date.now()}`;
    await h.mailer.send({ to: ['ann@example.test'], subject, text: 'plain words', html: '<p>rich <b>words</b></p>' });
    const mail = (await h.delivered()).find((m) => m.subject === subject);
    expect(mail!.text).toBe('plain words');
    expect(mail!.raw).toMatch(/multipart\/alternative/);
    expect(mail!.raw).toContain('<b>words</b>');
  });

  it('carries the extra header fields it is given (one-click unsubscribe, issue 43)', async () => {
    const subject = `headers ${Date.now()}`;
    const unsubscribe = '<https://status.example.test/v1/status/shop/unsubscribe?token=cxunsub_abc>';
    await h.mailer.send({
      to: ['ann@example.test'],
      subject,
      text: 'x',
      headers: { 'List-Unsubscribe': unsubscribe, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
    });
    const mail = (await h.delivered()).find((m) => m.subject === subject);
    const headers = parseMessage(mail!.raw).headers;
    expect(headers['list-unsubscribe']).toBe(unsubscribe);
    expect(headers['list-unsubscribe-post']).toBe('List-Unsubscribe=One-Click');
  });
}

describe('mailer contract: smtp (through a real SMTP receiver)', () => {
  mailerContract(async () => {
    const receiver = await startSmtpReceiver();
    const mailer = createSmtpMailer(receiver.url, FROM);
    return {
      mailer,
      delivered: async () => receiver.messages,
      stop: receiver.stop,
    };
  });

  it('hands the envelope to the server: sender and each recipient', async () => {
    const receiver = await startSmtpReceiver();
    const mailer = createSmtpMailer(receiver.url, FROM);
    try {
      await mailer.send({ to: ['ann@example.test', 'bob@example.test'], subject: 'envelope', text: 'x' });
      await receiver.waitFor(1);
      expect(receiver.messages[0].from).toBe('alerts@example.test');
      expect(receiver.messages[0].to).toEqual(['ann@example.test', 'bob@example.test']);
    } finally {
      await mailer.close();
      await receiver.stop();
    }
  });

  it('rejects when no server takes the message, so the caller can retry', async () => {
    const receiver = await startSmtpReceiver();
    await receiver.stop();
    const mailer = createSmtpMailer(receiver.url, FROM);
    await expect(mailer.send({ to: ['ann@example.test'], subject: 's', text: 't' })).rejects.toThrow();
    await mailer.close();
  });
});

describe('mailer contract: files', () => {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'info' }, { write: (l: string) => void lines.push(JSON.parse(l)) });
  let dir: string;
  mailerContract(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mail-'));
    const mailer = createFileMailer(path.join(dir, 'mail'), FROM, logger);
    return {
      mailer,
      async delivered() {
        const names = await readdir(path.join(dir, 'mail'));
        return Promise.all(
          names.map(async (n) => {
            const raw = await readFile(path.join(dir, 'mail', n), 'utf8');
            return { ...parseMessage(raw), raw };
          }),
        );
      },
      stop: () => rm(dir, { recursive: true, force: true }),
    };
  });

  it('writes only whole .eml files and logs recipients and subject for each', async () => {
    const names = await readdir(path.join(dir, 'mail'));
    expect(names.length).toBeGreaterThan(0);
    for (const n of names) expect(n).toMatch(/\.eml$/);
    const logged = lines.filter((l) => l.msg === 'mail written to file');
    expect(logged).toHaveLength(names.length);
    expect(logged[0]).toMatchObject({ to: ['ann@example.test', 'bob@example.test'] });
    expect(String(logged[0].subject)).toContain('New error in production');
  });
});
