import os from 'node:os';
import { Option } from 'commander';
import { ApiError, type Client } from '../client.ts';
import { forget, writeStored } from '../credentials.ts';
import { CliExit, EXIT, type Ctx, type Family, type Io } from './command.ts';

/** `cx login`, `logout`, `whoami`: the RFC 8628 device login and the token it leaves. */

const startDeviceLogin = (client: Client, clientName: string) => client.api.call('startDeviceLogin', { body: { client_name: clientName } });
const pollDeviceToken = (client: Client, deviceCode: string) => client.api.call('pollDeviceToken', { body: { device_code: deviceCode } });
const whoami = (client: Client) => client.api.call('whoami');

/** Open a URL in the browser only when it is the service's own https page and someone is at the terminal. */
export function openBrowser(io: Io, url: string, base: string): boolean {
  const u = new URL(url);
  if (u.protocol !== 'https:' || u.origin !== new URL(base).origin || !io.stdout.isTTY) return false;
  return io.openUrl(url);
}

/** RFC 8628 §3.5: poll at the server's interval, 5 s slower after each `slow_down`, until the code expires. */
async function login({ client, out, io }: Ctx, opts: { browser: boolean }): Promise<void> {
  const start = await startDeviceLogin(client, `cx on ${os.hostname()}`.slice(0, 100));
  const opened = opts.browser && openBrowser(io, start.verification_uri_complete, client.base);
  out.note(`Confirm this code in the console: ${out.paint('bold', start.user_code)}`);
  out.note(`${opened ? 'Opened' : 'Open'} ${start.verification_uri_complete}`);
  let interval = start.interval * 1000;
  const deadline = Date.now() + start.expires_in * 1000;
  const spin = out.spinner('waiting for approval');
  try {
    while (Date.now() < deadline) {
      await io.sleep(interval);
      try {
        const t = await pollDeviceToken(client, start.device_code);
        const me = await whoami(io.connect(client.base, t.access_token));
        const where = await writeStored({ baseUrl: client.base, token: t.access_token, email: me.user.email }, io.env);
        spin.stop();
        if (out.json) out.data({ user: me.user, baseUrl: client.base, credentials: where });
        else out.print(`Signed in as ${out.paint('bold', me.user.email)} to ${client.base} (token kept in ${where})`);
        return;
      } catch (err) {
        if (err instanceof ApiError && err.code === 'authorization_pending') continue;
        if (err instanceof ApiError && err.code === 'slow_down') {
          interval += 5000;
          continue;
        }
        throw err;
      }
    }
    throw new CliExit(EXIT.failed, 'the code expired before it was approved; run cx login again');
  } finally {
    spin.stop();
  }
}

export const account: Family = {
  commands: [
    {
      name: 'login',
      description: 'sign in with a device code the console approves',
      options: () => [new Option('--no-browser', 'do not open the browser')],
      run: (ctx, _args, opts) => login(ctx, { browser: opts.browser !== false }),
    },
    {
      name: 'logout',
      description: 'forget the stored token',
      async run({ out, io }) {
        const had = await forget(io.env);
        if (out.json) out.data({ signedOut: had });
        else out.print(had ? 'Signed out' : 'Not signed in');
      },
    },
    {
      name: 'whoami',
      description: 'who the token belongs to',
      async run({ client, out }) {
        const me = await whoami(client);
        if (out.json) return out.data(me);
        out.print(`${me.user.email} on ${client.base}`);
      },
    },
  ],
};
