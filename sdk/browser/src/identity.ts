import { cut, safe } from './transport.ts';

/** The visitor's id, kept in localStorage (`cx_id`); `set` replaces it (identify). */
export interface Identity {
  readonly id: string;
  set(id: unknown): void;
}

export function createIdentity(): Identity {
  const store = typeof localStorage === 'undefined' ? undefined : localStorage;
  let id = safe(() => store?.getItem('cx_id'))() || `cx_${Math.random().toString(36).slice(2)}${Date.now().toString(36)}`;
  safe(() => store?.setItem('cx_id', id))();
  return {
    get id() {
      return id;
    },
    set(next) {
      id = cut(next, 200) || id;
      safe(() => store?.setItem('cx_id', id))();
    },
  };
}
