import { LIMITS } from '../limits.ts';
import {
  CliTokenAnswer,
  CliTokenList,
  DeviceApproveAnswer,
  DeviceApproveBody,
  DeviceLogin,
  DeviceLoginQuery,
  DeviceStartAnswer,
  DeviceStartBody,
  DeviceTokenAnswer,
  DeviceTokenBody,
  IdParams,
  WhoamiAnswer,
} from './accounts.ts';
import { errorAnswers } from './common.ts';
import { ROUTES } from './route-table.ts';
import { routeShapes } from './route-shape.ts';

/**
 * `/v1/cli` (§4.8): the device login of RFC 8628 and the CLI's session: who it is, its tokens. The request and answer
 * shapes are the accounts family's (accounts.ts); these are the routes.
 */
const tags = ['cli'];
const L = LIMITS.cliDeviceCode;
const SERVICE_TOKEN_NOTE =
  'CLI clients send the token as `Authorization: Bearer cx_cli_...`; they also read it from the SERVICE_TOKEN environment variable (CI use).';

export const cliRoutes = routeShapes({
  startDeviceLogin: {
    tags,
    summary: 'Start a CLI device login',
    description: `Show user_code to the person and open verification_uri_complete; poll POST ${ROUTES.pollDeviceToken.path} every \`interval\` seconds. Public, so limited to ${L.startsPerIpPer10Min} starts per caller IP per 10 minutes (429 rate_limited with Retry-After). ${SERVICE_TOKEN_NOTE}`,
    body: DeviceStartBody,
    response: { 200: DeviceStartAnswer, ...errorAnswers(429) },
  },
  getDeviceLogin: {
    tags,
    summary: 'A pending CLI login: who asks, and where and when it started (console session)',
    description: `The approval page shows it before anyone approves (RFC 8628 §5.4). Looking codes up and approving them share a limit of ${L.codeChecksPerUserPer10Min} per signed-in person per 10 minutes.`,
    querystring: DeviceLoginQuery,
    response: { 200: DeviceLogin, ...errorAnswers(404, 410, 429) },
  },
  approveDeviceLogin: {
    tags,
    summary: 'Approve a CLI login (console session)',
    body: DeviceApproveBody,
    response: { 200: DeviceApproveAnswer, ...errorAnswers(404, 410, 429) },
  },
  pollDeviceToken: {
    tags,
    summary: 'Poll for the CLI token',
    description: `428 authorization_pending until approved; then the cx_cli_ token, once; 410 expired_token when the code expired or was already used. A poll sooner than the interval answers 429 slow_down (RFC 8628 §3.5) with the new \`interval\`, 5 s longer, which holds for every later poll. ${SERVICE_TOKEN_NOTE}`,
    body: DeviceTokenBody,
    response: { 200: DeviceTokenAnswer, ...errorAnswers(404, 410, 428, 429) },
  },
  whoami: { tags, summary: 'Who the CLI token (or session) belongs to', description: SERVICE_TOKEN_NOTE, response: { 200: WhoamiAnswer } },
  listCliTokens: { tags, summary: "The user's CLI tokens (hints only)", response: { 200: CliTokenList } },
  revokeCliToken: { tags, summary: 'Revoke a CLI token', params: IdParams, response: { 200: CliTokenAnswer, ...errorAnswers(404) } },
});
