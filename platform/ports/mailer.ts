/**
 * Mailer port. Adapters: SMTP via nodemailer (SMTP_URL) and files (embedded: one .eml per message
 * under DATA_DIR/mail, and a log line).
 */
export interface MailMessage {
  to: string[];
  subject: string;
  text: string;
  html?: string;
}

export interface Mailer {
  readonly adapter: 'smtp' | 'file';
  /** Resolves once the message is handed over (SMTP accepted it, or the file is written). */
  send(message: MailMessage): Promise<void>;
  close(): Promise<void>;
}
