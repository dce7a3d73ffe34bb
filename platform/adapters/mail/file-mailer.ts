import nodemailer from 'nodemailer';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { Logger } from '../../logger.ts';
import type { Mailer, MailMessage } from '../../ports/mailer.ts';

/**
 * File mailer: the embedded default. Each message becomes one RFC 5322 `.eml` file under `dir`
 * (built by nodemailer, so it is the same message SMTP would carry and opens in any mail client),
 * and a log line names the recipients and subject. Files are written under a temporary name and
 * renamed, so a reader never sees half a message.
 */
export function createFileMailer(dir: string, from: string, logger: Logger): Mailer {
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' });
  const ready = mkdir(dir, { recursive: true });
  return {
    adapter: 'file',
    async send(message: MailMessage): Promise<void> {
      const info = await transport.sendMail({
        from,
        to: message.to,
        subject: message.subject,
        text: message.text,
        html: message.html,
        headers: message.headers,
      });
      await ready;
      // Sortable by time, unique without coordination.
      const name = `${new Date().toISOString().replace(/[:.]/g, '-')}-${randomUUID().slice(0, 8)}.eml`;
      const file = path.join(dir, name);
      await writeFile(`${file}.tmp`, info.message as Buffer);
      await rename(`${file}.tmp`, file);
      logger.info({ to: message.to, subject: message.subject, file }, 'mail written to file');
    },
    async close() {
      transport.close();
    },
  };
}
