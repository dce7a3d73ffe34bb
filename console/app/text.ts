/** Words and sizes the pages share, kept apart from the components so they are tested alone. */
/** `1 event`, `2 events`: a count with its noun. */
export const countOf = (n: number, noun: string, plural = `${noun}s`) => `${n.toLocaleString()} ${n === 1 ? noun : plural}`;

/** Rows for a textarea holding `text`: never fewer than `min`, one free line below the last. */
export const rowsFor = (text: string, min = 4) => Math.min(20, Math.max(min, text.split('\n').length + 1));
