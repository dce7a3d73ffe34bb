import dns from 'node:dns';

/**
 * TXT lookups, for proving control of a custom domain (api/domains/). Production asks the system's resolver; tests
 * pass a fake through PlatformOverrides. Answers the record's strings (each TXT record's chunks joined), or []
 * when the name has none.
 */
export interface TxtResolver {
  resolveTxt(name: string): Promise<string[]>;
}

export const systemTxtResolver: TxtResolver = {
  async resolveTxt(name) {
    try {
      return (await dns.promises.resolveTxt(name)).map((chunks) => chunks.join(''));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENODATA' || code === 'ENOTFOUND') return [];
      throw err;
    }
  },
};
