import nodemailer from 'nodemailer';
import type { Mailer, MailMessage } from '../../ports/mailer.ts';

/**
 * SMTP mailer (nodemailer), chosen by SMTP_URL (`smtp://user:pass@host:587`, `smtps://...:465`).
 * A pooled transport keeps one connection warm for alert bursts; send resolves once the server
 * accepted the message, and rejects (the caller retries later) when it did not.
 */
export function createSmtpMailer(url: string, from: string): Mailer {
  const transport = nodemailer.createTransport({
    url,
    pool: true,
    maxConnections: 2,
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 30_000,
  } as Parameters<typeof nodemailer.createTransport>[0]);
  return {
    adapter: 'smtp',
    async send(message: MailMessage): Promise<void> {
      await transport.sendMail({ from, to: message.to, subject: message.subject, text: message.text, html: message.html, headers: message.headers });
    },
    async close() {
      transport.close();
    },
  };
}
