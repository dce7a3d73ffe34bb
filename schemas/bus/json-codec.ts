import type { z } from 'zod';

/** encode / decode for a topic whose messages are one JSON document checked by a schema (schemas/bus/README.md). */
export function jsonCodec<S extends z.ZodType>(schema: S) {
  return {
    /** Checked before it is written: a message the consumer would drop is refused at its producer instead. */
    encode: (m: z.input<S>): Buffer => Buffer.from(JSON.stringify(schema.parse(m))),
    decode(value: Buffer): z.output<S> | undefined {
      try {
        const r = schema.safeParse(JSON.parse(value.toString('utf8')));
        return r.success ? r.data : undefined;
      } catch {
        return undefined;
      }
    },
  };
}
