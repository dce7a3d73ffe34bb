import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './api.ts';

/** Small pieces every screen shares: loading a resource, running an action, showing a failure, a secret shown once. */

export interface Resource<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => Promise<void>;
  setData: (d: T) => void;
}

/** Load `fn` when `deps` change; keep the last data while reloading, so lists do not flash. */
export function useResource<T>(fn: () => Promise<T>, deps: unknown[]): Resource<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(true);
  const seq = useRef(0);
  const reload = useCallback(async () => {
    const mine = ++seq.current;
    setLoading(true);
    try {
      const d = await fn();
      if (mine === seq.current) {
        setData(d);
        setError(null);
      }
    } catch (err) {
      if (mine === seq.current) setError(err);
    } finally {
      if (mine === seq.current) setLoading(false);
    }
    // biome-ignore lint/correctness/useExhaustiveDependencies: the caller names what the load depends on (useResource's deps)
  }, deps);
  useEffect(() => {
    void reload();
  }, [reload]);
  return { data, error, loading, reload, setData };
}

/**
 * A form's fields, started from loaded data and started again whenever the data is replaced (loaded, reloaded, a save's
 * answer). Done while rendering, not in an effect: an effect runs a frame after the form appears, and overwrote what a
 * quick hand (or a test under load) had typed in between, which the save then lost.
 */
export function useFormFrom<T, F>(data: T | undefined, fieldsOf: (d: T) => F, empty: F): [F, (next: F | ((f: F) => F)) => void] {
  const state = useRef<{ from: T | undefined; form: F } | null>(null);
  const [, rerender] = useState(0);
  if (state.current === null || state.current.from !== data) state.current = { from: data, form: data === undefined ? empty : fieldsOf(data) };
  const set = useCallback((next: F | ((f: F) => F)) => {
    const s = state.current!;
    s.form = typeof next === 'function' ? (next as (f: F) => F)(s.form) : next;
    rerender((n) => n + 1);
  }, []);
  return [state.current.form, set];
}

/** Run an action from a button or form: busy while it runs, its failure kept to show. */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const run = useCallback(async <T,>(fn: () => Promise<T>): Promise<T | undefined> => {
    setBusy(true);
    setError(null);
    try {
      return await fn();
    } catch (err) {
      setError(err);
      return undefined;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, run, clear: () => setError(null) };
}

export function messageOf(err: unknown): string {
  if (err instanceof ApiError) return err.display;
  return err instanceof Error ? err.message : String(err);
}

/** A failure from the API, in its own words (never a blank screen). */
export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  const fields = error instanceof ApiError ? error.fields : [];
  return (
    <div class="note error" role="alert">
      <p>{messageOf(error)}</p>
      {fields.length > 1 && (
        <ul>
          {fields.map((f) => (
            <li key={f.path}>
              <code>{f.path.replace(/^body\./, '')}</code>: {f.message}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" role="status" aria-live="polite">
      Loading {what}…
    </p>
  );
}

/** The usual frame of a resource: loading, failed, or the content. */
export function Loaded<T>({ r, what, children }: { r: Resource<T>; what: string; children: (d: T) => ComponentChildren }) {
  if (r.data === undefined) return r.error ? <ErrorNote error={r.error} /> : <Loading what={what} />;
  return (
    <>
      <ErrorNote error={r.error} />
      {children(r.data)}
    </>
  );
}

export function CopyButton({ text, what }: { text: string; what: string }) {
  const [done, setDone] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
    } catch {
      // Clipboard refused (no permission, not a secure context): the text is selectable on the page.
    }
    setDone(true);
    setTimeout(() => setDone(false), 1500);
  };
  return (
    <button type="button" class="secondary small" onClick={copy} aria-label={`Copy ${what}`}>
      {done ? 'Copied' : 'Copy'}
    </button>
  );
}

/** A secret the API shows once: what it is, the value to copy, and that it will not be shown again. */
export function ShownOnce({
  title,
  items,
  onDone,
  children,
}: {
  title: string;
  items: Array<{ label: string; value: string }>;
  onDone: () => void;
  children?: ComponentChildren;
}) {
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => ref.current?.focus(), []);
  return (
    <div class="note once" role="region" aria-label={title} tabIndex={-1} ref={ref}>
      <h3>{title}</h3>
      <p>Copy it now: it is shown only this once.</p>
      {items.map((i) => (
        <div class="secret" key={i.label}>
          <span class="label">{i.label}</span>
          <code data-secret={i.label}>{i.value}</code>
          <CopyButton text={i.value} what={i.label} />
        </div>
      ))}
      {children}
      <button type="button" onClick={onDone}>
        I have saved it
      </button>
    </div>
  );
}

const UNITS: Array<[number, string]> = [
  [60, 's'],
  [60, 'min'],
  [24, 'h'],
  [30, 'd'],
  [12, 'mo'],
];

export function ago(iso: string, now = Date.now()): string {
  let v = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (v < 5) return 'just now';
  for (const [size, unit] of UNITS) {
    if (v < size) return `${v} ${unit} ago`;
    v = Math.floor(v / size);
  }
  return `${v} y ago`;
}

export function Time({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <span class="muted">never</span>;
  return (
    <time dateTime={iso} title={new Date(iso).toLocaleString()}>
      {ago(iso)}
    </time>
  );
}

export function Badge({ kind, children }: { kind: string; children: ComponentChildren }) {
  return <span class={`badge ${kind}`}>{children}</span>;
}

export function PageHead({ title, children }: { title: string; children?: ComponentChildren }) {
  useEffect(() => {
    document.title = `${title} · Console`;
  }, [title]);
  return (
    <div class="page-head">
      <h1>{title}</h1>
      <div class="actions">{children}</div>
    </div>
  );
}

/** A data table: a caption for screen readers, column headings ('' for the actions column), the rows. */
export function Table({ caption, columns, class: cls, children }: { caption: string; columns: string[]; class?: string; children: ComponentChildren }) {
  return (
    <table class={cls ? `table ${cls}` : 'table'}>
      <caption class="sr-only">{caption}</caption>
      <thead>
        <tr>
          {columns.map((c, i) => (
            <th scope="col" key={i}>
              {c || <span class="sr-only">Actions</span>}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>{children}</tbody>
    </table>
  );
}

/** A form's submit button, and "Saved." once the API took the change. */
export function SubmitRow({ label, busy, saved }: { label: string; busy: boolean; saved?: boolean }) {
  return (
    <div class="row">
      <button type="submit" disabled={busy}>
        {label}
      </button>
      {saved && (
        <span role="status" class="ok-text">
          Saved.
        </span>
      )}
    </div>
  );
}

/**
 * Newest and Older for a list read a cursor page at a time, newest first (`{data, hasMore, nextCursor}`): shown once
 * there is more than one page. `cursor` is the page shown (null: the newest).
 */
export function NewestOlder({
  cursor,
  page,
  onCursor,
  label = 'Pages',
}: {
  cursor: string | null;
  page: { hasMore: boolean; nextCursor: string | null } | undefined;
  onCursor: (cursor: string | null) => void;
  label?: string;
}) {
  if (!cursor && !page?.hasMore) return null;
  return (
    <nav class="pager" aria-label={label}>
      <button type="button" class="secondary" disabled={!cursor} onClick={() => onCursor(null)}>
        Newest
      </button>
      <button type="button" class="secondary" disabled={!page?.hasMore} onClick={() => onCursor(page!.nextCursor)}>
        Older
      </button>
    </nav>
  );
}

/** Lines of a textarea as a list (blank lines dropped). */
export const lines = (text: string) =>
  text
    .split(/[\n,]/)
    .map((s) => s.trim())
    .filter(Boolean);

export { countOf, rowsFor } from './text.ts';
