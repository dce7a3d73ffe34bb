// The first process of a sandboxed build (builder/sandbox/sandbox.ts). Plain JavaScript, run by the system's node
// inside the sandbox, which has no network but its own loopback:
//   argv: <egress socket or ""> <command> [args...]
// With a socket, it listens on 127.0.0.1:3128 and relays every connection to the builder's egress proxy through
// the bind-mounted Unix socket (HTTP_PROXY/HTTPS_PROXY point here). Then it runs the command with this process's
// environment and exits with its status. When it exits, the sandbox's PID namespace ends and every process the
// build started dies with it.
import net from 'node:net';
import os from 'node:os';
import { spawn } from 'node:child_process';

const [socketPath, command, ...args] = process.argv.slice(2);
if (socketPath) {
  const server = net.createServer((inside) => {
    const out = net.connect(socketPath);
    inside.pipe(out).pipe(inside);
    inside.on('error', () => out.destroy());
    out.on('error', () => inside.destroy());
  });
  await new Promise((resolve, reject) => server.once('error', reject).listen(3128, '127.0.0.1', resolve));
  server.unref();
}
const child = spawn(command, args, { stdio: 'inherit' });
child.on('error', (err) => {
  process.stderr.write(`could not start ${command}: ${err.message}\n`);
  process.exit(127);
});
child.on('exit', (code, signal) => process.exit(code ?? 128 + (os.constants.signals[signal] ?? 9)));
