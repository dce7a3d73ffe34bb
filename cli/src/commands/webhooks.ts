import type { Client } from '../client.ts';
import type { Family } from './command.ts';

/** `cx webhooks deliveries | replay | test`: what the project's outbound webhooks delivered, and sending again. */

const _e = encodeURIComponent;
const listAttempts = (client: Client, slug: string, endpointId: string) => client.api.call('listWebhookAttempts', { params: { slug, id: endpointId } });
const replayDelivery = (client: Client, slug: string, deliveryId: string) => client.api.call('replayWebhookDelivery', { params: { slug, id: deliveryId } });
const sendTestEvent = (client: Client, slug: string) => client.api.call('sendTestWebhook', { params: { slug } });

export const webhooks: Family = {
  groups: { webhooks: 'webhook deliveries' },
  commands: [
    {
      name: 'webhooks deliveries',
      args: '<endpointId>',
      description: "an endpoint's delivery log",
      project: true,
      async run({ client, out, project }, [endpointId]) {
        const r = await listAttempts(client, project(), endpointId!);
        if (out.json) return out.data(r);
        out.table(
          r.deliveries.map((d) => ({
            delivery: d.deliveryId,
            event: d.event,
            attempt: d.attempt,
            status: d.status,
            code: d.responseCode,
            error: d.error,
            at: d.startedAt,
          })),
          ['delivery', 'event', 'attempt', 'status', 'code', 'error', 'at'],
        );
      },
    },
    {
      name: 'webhooks replay',
      args: '<deliveryId>',
      project: true,
      async run({ client, out, project }, [deliveryId]) {
        const r = await replayDelivery(client, project(), deliveryId!);
        if (out.json) return out.data(r);
        out.print(`Replay of ${deliveryId} queued`);
      },
    },
    {
      name: 'webhooks test',
      description: 'send webhook.test',
      project: true,
      async run({ client, out, project }) {
        const r = await sendTestEvent(client, project());
        if (out.json) return out.data(r);
        out.print('webhook.test sent to the endpoints subscribed to it');
      },
    },
  ],
};
