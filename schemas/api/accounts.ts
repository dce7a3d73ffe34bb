import { z } from 'zod';
import { LIMITS } from '../limits.ts';
import { errorAnswers, NoContent } from './common.ts';
import { routeShapes } from './route-shape.ts';

/** Console accounts (spec §4.1): sign-in, sign-out, the current user; and the CLI's device login and tokens (§4.8). */
export const UserSchema = z.object({ id: z.string(), email: z.string(), name: z.string().nullable(), createdAt: z.string() });
export type User = z.infer<typeof UserSchema>;
export const SignInBody = z.object({ email: z.email().max(320), password: z.string().min(1).max(1024) });
export type SignInBody = z.infer<typeof SignInBody>;
export const SignedInAnswer = z.object({ user: UserSchema });
export type SignedInAnswer = z.infer<typeof SignedInAnswer>;
export const CredentialKindSchema = z.enum(['session', 'cli']);
export const MeAnswer = z.object({ user: UserSchema, credential: z.object({ kind: CredentialKindSchema }) });
export type MeAnswer = z.infer<typeof MeAnswer>;
export type Me = z.infer<typeof MeAnswer>;

/** The device login of RFC 8628 (device_code, user_code, ...), which device-flow clients already speak. */
export const DeviceStartBody = z.object({ client_name: z.string().trim().max(100).optional() }).optional();
export const DeviceStartAnswer = z.object({
  device_code: z.string(),
  user_code: z.string(),
  verification_uri: z.string(),
  verification_uri_complete: z.string(),
  interval: z.number(),
  expires_in: z.number(),
});
export type DeviceStartAnswer = z.infer<typeof DeviceStartAnswer>;
export type DeviceStart = z.infer<typeof DeviceStartAnswer>;
export const DeviceApproveBody = z.object({ user_code: z.string().min(1).max(20) });
export const DeviceLoginQuery = z.object({ user_code: z.string().min(1).max(20) });
/** A pending CLI login as the approval page shows it (RFC 8628 §5.4): who asks, where and when it started. */
export const DeviceLogin = z.object({
  user_code: z.string(),
  client_name: z.string().describe("the CLI's own word (`cx on <hostname>`)"),
  started_at: z.string(),
  expires_at: z.string(),
  ip: z.string().nullable().describe('the address the login was started from, as the service saw it'),
  user_agent: z.string().nullable(),
});
export type DeviceLogin = z.infer<typeof DeviceLogin>;
export const DeviceApproveAnswer = z.object({ approved: z.literal(true), client_name: z.string() });
export type DeviceApproveAnswer = z.infer<typeof DeviceApproveAnswer>;
export type DeviceApproval = z.infer<typeof DeviceApproveAnswer>;
export const DeviceTokenBody = z.object({ device_code: z.string().min(1).max(200) });
export const DeviceTokenAnswer = z.object({ access_token: z.string(), token_type: z.literal('Bearer'), token_id: z.string() });
export type DeviceTokenAnswer = z.infer<typeof DeviceTokenAnswer>;
export type DeviceToken = z.infer<typeof DeviceTokenAnswer>;
export const WhoamiAnswer = z.object({ user: UserSchema, credential: z.object({ kind: CredentialKindSchema, tokenId: z.string().optional() }) });
export type WhoamiAnswer = z.infer<typeof WhoamiAnswer>;
export type Whoami = z.infer<typeof WhoamiAnswer>;

export const CliTokenSchema = z.object({
  id: z.string(),
  name: z.string(),
  hint: z.string(),
  createdAt: z.string(),
  lastUsedAt: z.string().nullable(),
  revokedAt: z.string().nullable(),
  revoked: z.boolean(),
});
export type CliToken = z.infer<typeof CliTokenSchema>;
export const CliTokenList = z.object({ tokens: z.array(CliTokenSchema) });
export type CliTokenList = z.infer<typeof CliTokenList>;
export const CliTokenAnswer = z.object({ token: CliTokenSchema });
export type CliTokenAnswer = z.infer<typeof CliTokenAnswer>;
export const IdParams = z.object({ id: z.string() });

const tags = ['auth'];
const S = LIMITS.signIn;

/** The console session's routes (paths in route-table.ts); the CLI's are cli.ts's. */
export const accountRoutes = routeShapes({
  signIn: {
    tags,
    summary: 'Sign in with email and password; sets the cx_session cookie',
    description: `Rate limited per 15 minutes (429 rate_limited with Retry-After): ${S.perEmailAndIpPer15Min} attempts per email and IP and ${S.perIpPer15Min} per IP; a browser that signed in to the account before (the \`cx_device\` cookie) counts only against itself (${S.perDevicePer15Min}), so guesses from a shared IP cannot lock its owner out.`,
    body: SignInBody,
    response: { 200: SignedInAnswer, ...errorAnswers(401, 429) },
  },
  signOut: { tags, summary: 'End the current console session (server-side)', response: { 204: NoContent } },
  me: { tags, summary: 'The signed-in user', response: { 200: MeAnswer } },
});
