import { formatFrame, type StackFrame } from './stack-parser.ts';

/**
 * The first-thing-to-check hint of an issue (spec §2.6): matched from the error's name and message,
 * pointed at the first in-app frame. It is a hint, not a diagnosis, and its wording says so.
 */
interface Rule {
  test: RegExp;
  hint: (m: RegExpExecArray) => string;
}

const RULES: Rule[] = [
  {
    test: /Cannot read propert(?:y|ies) of (undefined|null)(?: \(reading '([^']*)'\))?/i,
    hint: (m) =>
      `something is ${m[1]} where code reads${m[2] ? ` '${m[2]}'` : ' a property'}: check that the object is loaded (and the data fetched) before it is used, or guard with optional chaining.`,
  },
  {
    test: /Cannot set propert(?:y|ies) of (undefined|null)/i,
    hint: (m) => `code assigns a property on ${m[1]}: check the object exists before writing to it.`,
  },
  {
    test: /\b(\S+) is (undefined|null)\b|undefined is not an object|null is not an object/i,
    hint: () => 'a value is undefined or null where an object is expected: check that it is loaded before it is used, or guard with optional chaining.',
  },
  {
    test: /\b(\S+) is not defined\b|Can't find variable: (\S+)/i,
    hint: (m) => `'${m[1] ?? m[2]}' is referenced but never declared in that scope: check for a typo, a missing import, or a script that did not load.`,
  },
  {
    test: /\b(\S+) is not a function\b/i,
    hint: (m) => `'${m[1]}' is called but is not a function: check the value's type, the import (default vs named) and the library version.`,
  },
  {
    test: /Loading (?:CSS )?chunk \S+ failed|ChunkLoadError|Failed to fetch dynamically imported module|Importing a module script failed|error loading dynamically imported module/i,
    hint: () =>
      'a code chunk failed to load, often because a new deploy replaced the old assets while the page was open: check that old assets stay available or reload on this error.',
  },
  {
    test: /Failed to fetch|NetworkError|Network request failed|Load failed|CORS|Access-Control-Allow-Origin|ERR_NETWORK/i,
    hint: () => 'a network request failed: check that the URL is reachable from the client, the CORS headers of the server, and whether the user was offline.',
  },
  {
    test: /Unexpected token|JSON\.parse|is not valid JSON|Unexpected end of JSON input|JSON Parse error/i,
    hint: () =>
      'a response or string that was parsed as JSON is not JSON (often an HTML error page): check the status and content type of the response before parsing it.',
  },
  {
    test: /ECONNREFUSED/i,
    hint: () => 'a connection was refused: check that the service it connects to is running and that host and port are right.',
  },
  {
    test: /timed? ?out|ETIMEDOUT|TimeoutError|deadline exceeded/i,
    hint: () => 'an operation timed out: check the latency of the service it waits on, and whether the timeout is too short.',
  },
  {
    test: /out of memory|heap out of memory|Allocation failed|ENOMEM/i,
    hint: () => 'memory ran out: check for data loaded whole instead of streamed, and for caches or listeners that grow without bound.',
  },
  {
    test: /Maximum call stack size exceeded|too much recursion/i,
    hint: () => 'the call stack overflowed: check for unbounded recursion, or two functions (or effects) that call each other.',
  },
  {
    test: /ResizeObserver loop/i,
    hint: () => 'a ResizeObserver callback changed layout it observes; this browser warning is usually harmless and can often be ignored.',
  },
  {
    test: /EACCES|EPERM|permission denied|NotAllowedError/i,
    hint: () => 'permission was denied: check file or resource permissions, or that the browser permission was granted by a user gesture.',
  },
  {
    test: /ENOENT|no such file or directory/i,
    hint: () => 'a file was not found: check the path and the working directory the process runs in.',
  },
  {
    test: /\b(?:401|403|Unauthorized|Forbidden)\b/i,
    hint: () => 'a request was refused as unauthorised: check the credential it sends and whether it expired.',
  },
];

export function suggestFirstCheck(name: string, message: string, inAppFrame?: StackFrame): string {
  const text = `${name}: ${message}`;
  let hint: string | undefined;
  for (const rule of RULES) {
    const m = rule.test.exec(text);
    if (m) {
      hint = rule.hint(m);
      break;
    }
  }
  hint ??= `read the error message and the code around the first frame of your own code.`;
  const where = inAppFrame ? ` Start at ${formatFrame(inAppFrame)}.` : ' No frame of your own code was found in the stack.';
  return `Hint, not a diagnosis: ${hint}${where}`;
}
