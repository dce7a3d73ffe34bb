import { cut, randomId, safe } from './transport.ts';

/** The visitor's id, kept in localStorage (`cx_id`); `set` replaces it (identify). */
export interface Identity {
  readonly id: string;
  set(id: unknown): void;
}

export function createIdentity(): Identity {
  const keep = safe(() => localStorage.setItem('cx_id', id));
  let id = safe(() => localStorage.getItem('cx_id'))() || `cx_${randomId()}`;
  keep();
  return {
    get id() {
      return id;
    },
    set(next) {
      id = cut(next, 200) || id;
      keep();
    },
  };
}
