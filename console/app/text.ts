/** Words and sizes the pages share, kept apart from the components so they are tested alone. */
/** `1 event`, `2 events`: a count with its noun. */
export const countOf = (n: number, noun: string, plural = `${noun}s`) => `${n.toLocaleString()} ${n === 1 ? noun : plural}`;

/** Rows for a textarea holding `text`: never fewer than `min`, one free line below the last. */
export const rowsFor = (text: string, min = 4) => Math.min(20, Math.max(min, text.split('\n').length + 1));

/** `512 B`, `94.1 KB`, `1.8 MB`: a file's size as people read it (1 KB = 1024 bytes). */
export function sizeOf(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KB', 'MB', 'GB'];
  let n = bytes / 1024;
  let u = 0;
  while (n >= 1024 && u < units.length - 1) {
    n /= 1024;
    u++;
  }
  return `${n >= 100 ? Math.round(n) : n.toFixed(1)} ${units[u]}`;
}

/** `text` cut to at most `max` characters, the cut marked with an ellipsis (a property value a sender made long). */
export const clipped = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);
