/**
 * How the CLI speaks: `--json` prints the API's own JSON; otherwise tables and short sentences. Colour only on a TTY
 * and never with NO_COLOR; a spinner (on stderr, TTY only) while something waits.
 */
export interface Out {
  json: boolean;
  color: boolean;
  print(text: string): void;
  data(value: unknown): void;
  table(rows: Array<Record<string, string | number | null | undefined>>, columns: string[]): void;
  note(text: string): void;
  paint(kind: 'ok' | 'bad' | 'dim' | 'bold' | 'warn', text: string): string;
  spinner(text: string): { update(text: string): void; stop(): void };
}

/** Where text goes: process.stdout and process.stderr, or what a unit test reads back. */
export interface Sink {
  write(text: string): unknown;
  isTTY?: boolean;
}

const CODES = { ok: 32, bad: 31, dim: 2, bold: 1, warn: 33 } as const;

export function createOut(opts: { json: boolean }, stream: Sink = process.stdout, err: Sink = process.stderr, env = process.env): Out {
  const color = !!stream.isTTY && !env.NO_COLOR && env.TERM !== 'dumb';
  const errTty = !!err.isTTY && !env.NO_COLOR;
  const paint: Out['paint'] = (kind, text) => (color ? `\u001b[${CODES[kind]}m${text}\u001b[0m` : text);
  return {
    json: opts.json,
    color,
    paint,
    print: (text) => void stream.write(`${text}\n`),
    data: (value) => void stream.write(`${JSON.stringify(value, null, 2)}\n`),
    note: (text) => void err.write(`${text}\n`),
    table(rows, columns) {
      if (!rows.length) return void stream.write(`${paint('dim', '(none)')}\n`);
      const cell = (v: unknown) => (v === null || v === undefined ? '-' : String(v));
      const widths = columns.map((c) => Math.min(60, Math.max(c.length, ...rows.map((r) => cell(r[c]).length))));
      const line = (vals: string[]) =>
        vals
          .map((v, i) => (v.length > widths[i]! ? `${v.slice(0, widths[i]! - 1)}…` : v.padEnd(widths[i]!)))
          .join('  ')
          .trimEnd();
      stream.write(`${paint('bold', line(columns.map((c) => c.toUpperCase())))}\n`);
      for (const r of rows) stream.write(`${line(columns.map((c) => cell(r[c])))}\n`);
    },
    spinner(text) {
      if (!errTty || opts.json) return { update: () => undefined, stop: () => undefined };
      const frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
      let i = 0;
      let current = text;
      const timer = setInterval(() => err.write(`\r${frames[i++ % frames.length]} ${current}\u001b[K`), 100);
      return {
        update: (t) => void (current = t),
        stop: () => {
          clearInterval(timer);
          err.write('\r\u001b[K');
        },
      };
    },
  };
}
