import net from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { pino } from 'pino';
import { createKafkaBus, MAX_PUBLISH_BYTES, noDelaySocketFactory } from './kafka-bus.ts';
import { backendUrl, describeWith } from '../../../test/support/backends.ts';

describe('kafka connections', () => {
  afterEach(() => vi.restoreAllMocks());

  it('turn Nagle off (TCP_NODELAY) and keep TCP keep-alive, as kafkajs own factory does', async () => {
    const server = net.createServer((s) => s.on('error', () => undefined));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    const noDelay = vi.spyOn(net.Socket.prototype, 'setNoDelay');
    const keepAlive = vi.spyOn(net.Socket.prototype, 'setKeepAlive');
    let socket: net.Socket | undefined;
    await new Promise<void>((resolve) => {
      socket = noDelaySocketFactory({ host: '127.0.0.1', port, ssl: undefined as never, onConnect: resolve });
    });
    // kafkajs's default factory leaves Nagle on: a produce written while the previous one is unacknowledged
    // can wait for the broker's delayed ACK (40 ms on Linux).
    expect(noDelay.mock.contexts).toContain(socket);
    expect(noDelay.mock.calls[noDelay.mock.contexts.indexOf(socket)]).toEqual([true]);
    expect(keepAlive.mock.contexts).toContain(socket);
    socket!.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
});

describeWith(['kafka'], 'kafka bus connections', () => {
  afterEach(() => vi.restoreAllMocks());

  it('every connection the bus opens to the cluster has Nagle off', async () => {
    const noDelay = vi.spyOn(net.Socket.prototype, 'setNoDelay');
    const connect = vi.spyOn(net, 'connect');
    const bus = await createKafkaBus({ brokers: backendUrl('kafka')!.split(','), clientId: 'test-nodelay', logger: pino({ level: 'silent' }) });
    try {
      await bus.publish('test-nodelay', [{ key: 'k', value: Buffer.from('v') }]);
      const opened = connect.mock.results.map((r) => r.value as net.Socket);
      expect(opened.length).toBeGreaterThan(0);
      for (const socket of opened) expect(noDelay.mock.contexts).toContain(socket);
      // The edge's publisher splits its sends by this (ingest/coalescing-publisher.ts).
      expect(bus.maxPublishBytes).toBe(MAX_PUBLISH_BYTES);
    } finally {
      await bus.close();
    }
  });
});
