/** Types for the part of fs-native-extensions (holepunchto) this project uses: advisory file locks. */
declare module 'fs-native-extensions' {
  /** true when the lock was granted, false when another open file description holds it (EAGAIN). */
  export function tryLock(fd: number, opts?: { shared?: boolean }): boolean;
  export function unlock(fd: number): void;
}
