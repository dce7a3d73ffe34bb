import { describe, expect, it } from 'vitest';
import { createReceiverGates } from './receiver-gates.ts';

describe('receiver gates', () => {
  it('lets at most max deliveries in per origin, hands a released place to the next waiting, and leaves other origins free', async () => {
    const gates = createReceiverGates(2);
    expect(await gates.acquire('https://slow.example', 1_000)).toBe(true);
    expect(await gates.acquire('https://slow.example', 1_000)).toBe(true);
    const third = gates.acquire('https://slow.example', 1_000);
    expect(await gates.acquire('https://fast.example', 1)).toBe(true);
    gates.release('https://slow.example');
    expect(await third).toBe(true);
    expect(gates.active('https://slow.example')).toBe(2);
  });

  it('answers false after the wait, and forgets the waiter', async () => {
    const gates = createReceiverGates(1);
    expect(await gates.acquire('o', 10)).toBe(true);
    expect(await gates.acquire('o', 10)).toBe(false);
    gates.release('o');
    expect(gates.active('o')).toBe(0);
    expect(await gates.acquire('o', 10)).toBe(true);
  });
});
