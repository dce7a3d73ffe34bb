import { pino, type Logger } from 'pino';

export type { Logger };

/** JSON logs (pino). Secrets never reach a log line: tokens are redacted by path. */
export function createLogger(level: string, name = 'service'): Logger {
  return pino({
    name,
    level,
    redact: { paths: ['req.headers.authorization', 'req.headers.cookie', 'req.headers["x-service-analytics-key"]', '*.password', '*.token', '*.secret'], censor: '[Filtered]' },
  });
}
