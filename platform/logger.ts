import { pino, type Logger } from 'pino';

export type { Logger };

/** JSON logs (pino). Secrets never reach a log line: tokens are redacted by path. */
export function createLogger(level: string, name = 'service'): Logger {
  return pino(
    {
      name,
      level,
      redact: {
        paths: ['req.headers.authorization', 'req.headers.cookie', 'req.headers["x-service-analytics-key"]', '*.password', '*.token', '*.secret'],
        censor: '[Filtered]',
      },
    },
    // Written synchronously, in order with what the service prints itself (the first start's credentials box comes
    // last): nothing logs per request at info, so the cost is a few lines at start.
    pino.destination({ dest: 1, sync: true }),
  );
}
