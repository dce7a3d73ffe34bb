/**
 * Mailer port. Adapters: SMTP via nodemailer (SMTP_URL) and files (embedded: one .eml per message
 * under DATA_DIR/mail, and a log line).
 */
export interface MailMessage {
  to: string[];
  subject: string;
  text: string;
  html?: string;
  /** Extra header fields (e.g. List-Unsubscribe, List-Unsubscribe-Post); names and values are the caller's own, never a visitor's. */
  headers?: Record<string, string>;
}

export interface Mailer {
  readonly adapter: 'smtp' | 'file';
  /** Resolves once the message is handed over (SMTP accepted it, or the file is written). */
  send(message: MailMessage): Promise<void>;
  close(): Promise<void>;
}
