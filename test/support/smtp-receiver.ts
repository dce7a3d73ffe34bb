import { SMTPServer } from 'smtp-server';
import type { AddressInfo } from 'node:net';

export interface ReceivedMail {
  /** Envelope sender (MAIL FROM). */
  from: string;
  /** Envelope recipients (RCPT TO). */
  to: string[];
  subject: string;
  /** The text/plain body, transfer-decoded. */
  text: string;
  /** The whole message as received. */
  raw: string;
}

/**
 * A real SMTP receiver (smtp-server) on a free loopback port, for tests of the SMTP mailer and of
 * alert mail. No TLS, any or no credentials accepted. Messages are parsed just enough for tests
 * (headers, encoded words, one level of multipart, quoted-printable and base64).
 */
export async function startSmtpReceiver(): Promise<{
  url: string;
  messages: ReceivedMail[];
  waitFor(n: number, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}> {
  const messages: ReceivedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onAuth(_auth, _session, cb) {
      cb(null, { user: 'test' });
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const parsed = parseMessage(raw);
        messages.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          subject: parsed.subject,
          text: parsed.text,
          raw,
        });
        cb();
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    messages,
    async waitFor(n, timeoutMs = 10_000) {
      const end = Date.now() + timeoutMs;
      while (messages.length < n) {
        if (Date.now() > end) throw new Error(`smtp receiver: expected ${n} message(s), got ${messages.length}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Minimal RFC 5322/MIME reading: headers (unfolded, encoded words decoded) and the text/plain body. */
export function parseMessage(raw: string): { headers: Record<string, string>; subject: string; text: string } {
  const { headers, body } = splitHeaders(raw);
  return { headers, subject: headers['subject'] ?? '', text: textPart(headers, body) };
}

function splitHeaders(raw: string): { headers: Record<string, string>; body: string } {
  const norm = raw.replace(/\r\n/g, '\n');
  const cut = norm.indexOf('\n\n');
  const head = cut < 0 ? norm : norm.slice(0, cut);
  const body = cut < 0 ? '' : norm.slice(cut + 2);
  const headers: Record<string, string> = {};
  for (const line of head.replace(/\n[ \t]+/g, ' ').split('\n')) {
    const i = line.indexOf(':');
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = decodeWords(line.slice(i + 1).trim());
  }
  return { headers, body };
}

function textPart(headers: Record<string, string>, body: string): string {
  const type = headers['content-type'] ?? 'text/plain';
  const boundary = /boundary="?([^";]+)"?/i.exec(type)?.[1];
  if (/^multipart\//i.test(type) && boundary) {
    for (const part of body.split(`--${boundary}`).slice(1)) {
      if (part.startsWith('--')) break;
      const p = splitHeaders(part.replace(/^\n/, ''));
      const text = textPart(p.headers, p.body);
      if (text || /^text\/plain/i.test(p.headers['content-type'] ?? '')) return text;
    }
    return '';
  }
  if (!/^text\/plain/i.test(type)) return '';
  const cte = (headers['content-transfer-encoding'] ?? '7bit').toLowerCase();
  let out: string;
  if (cte === 'base64') out = Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8');
  else if (cte === 'quoted-printable') out = decodeQuotedPrintable(body);
  else out = body;
  return out.replace(/\n+$/, '');
}

function decodeQuotedPrintable(s: string): string {
  // Percent-escape first so a literal '%' survives, then turn =XX into %XX and decode as UTF-8.
  return decodeURIComponent(
    s
      .replace(/=\n/g, '')
      .replace(/%/g, '%25')
      .replace(/=([0-9A-F]{2})/gi, '%$1'),
  );
}

function decodeWords(s: string): string {
  return s
    .replace(/\?=\s+=\?/g, '?==?')
    .replace(/=\?([^?]+)\?([BQ])\?([^?]*)\?=/gi, (_, _charset: string, enc: string, data: string) =>
      enc.toUpperCase() === 'B' ? Buffer.from(data, 'base64').toString('utf8') : decodeQuotedPrintable(data.replace(/_/g, ' ')),
    );
}
