import { type BuildOptions, type BuildResult, build, type SameShape, stop } from 'esbuild';

/**
 * esbuild for what the service bundles while it runs (the console, the browser SDK's script): once the last bundle
 * in flight is done, esbuild's service process is stopped (issue 44: it stayed behind, ~28 MB resident, for the life
 * of the service); a later bundle starts it again.
 */
let inFlight = 0;

export async function bundleAtRuntime<O extends BuildOptions>(options: SameShape<BuildOptions, O>): Promise<BuildResult<O>> {
  inFlight++;
  try {
    return await build(options);
  } finally {
    if (--inFlight === 0) await stop();
  }
}

/** Bundles in flight (tests). */
export const bundlesInFlight = () => inFlight;
