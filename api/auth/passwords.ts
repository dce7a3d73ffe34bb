/** Password hashing lives in platform/passwords.ts (preview passwords use it too, from hosting/). */
export { dummyPasswordHash, hashPassword, verifyPassword } from '../../platform/passwords.ts';
