/** The benches' command line: `--name <number>` options and `--name` switches, read from process.argv. */
const argv = process.argv.slice(2);

export function numberArg(name: string, dflt: number): number {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? Number(argv[i + 1]) : dflt;
}

export function flagArg(name: string): boolean {
  return argv.includes(`--${name}`);
}
