import net from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { pino } from 'pino';
import { createKafkaBus, MAX_PUBLISH_BYTES, noDelaySocketFactory, rememberingPartitioner } from './kafka-bus.ts';
import { loadKafkajs } from './kafkajs-runtime.ts';
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
      socket = noDelaySocketFactory!({ host: '127.0.0.1', port, ssl: undefined as never, onConnect: resolve });
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

describe('kafka partitioner', () => {
  const { Partitioners } = loadKafkajs().kafkajs;
  const meta = (n: number) => Array.from({ length: n }, (_, i) => ({ partitionId: i, leader: i % 3, replicas: [i % 3], isr: [i % 3], partitionErrorCode: 0 }));

  it("puts every keyed message where kafkajs's default (Java-compatible) partitioner does", () => {
    const remembering = rememberingPartitioner()();
    const plain = Partitioners.DefaultPartitioner();
    for (const n of [1, 3, 4, 12, 50]) {
      for (let i = 0; i < 500; i++) {
        const message = { key: `prj_${i.toString(36)}`, value: 'v' };
        const args = { topic: 't', partitionMetadata: meta(n), message };
        // Twice: the first computes, the second is remembered.
        expect(remembering(args)).toBe(plain(args));
        expect(remembering(args)).toBe(plain(args));
      }
    }
  });

  it('computes a key once per partition count, and leaves explicit partitions and unkeyed messages to the default', () => {
    const calls: unknown[] = [];
    const counting = () => {
      const p = Partitioners.DefaultPartitioner();
      return (args: Parameters<ReturnType<typeof Partitioners.DefaultPartitioner>>[0]) => {
        calls.push(args.message.key);
        return p(args);
      };
    };
    const partition = rememberingPartitioner(counting)();
    for (let i = 0; i < 100; i++) partition({ topic: 't', partitionMetadata: meta(4), message: { key: 'prj_a', value: 'v' } });
    expect(calls).toEqual(['prj_a']);
    partition({ topic: 't', partitionMetadata: meta(8), message: { key: 'prj_a', value: 'v' } });
    expect(calls).toHaveLength(2);
    expect(partition({ topic: 't', partitionMetadata: meta(4), message: { key: 'prj_a', partition: 3, value: 'v' } })).toBe(3);
    partition({ topic: 't', partitionMetadata: meta(4), message: { value: 'v' } });
    partition({ topic: 't', partitionMetadata: meta(4), message: { value: 'v' } });
    expect(calls).toHaveLength(5);
  });
});
