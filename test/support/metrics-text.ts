/**
 * Reading the Prometheus text format in tests: the value of one series, found by name and labels (every label given
 * must match; others may be present). Undefined when no such series is shown.
 */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const shown = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => shown[k] === v)) return Number(m[3]);
  }
  return undefined;
}
