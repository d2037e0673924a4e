/**
 * `fastify.webhooks`: the outbox every job ending (in the end's own transaction) and budget alert
 * is enqueued in, its delivery loop (started with the service, stopped before the engines close),
 * and the request-time check of a `webhook_url`.
 */
import fp from 'fastify-plugin';
import { WebhookOutbox } from '../webhooks/outbox';
import { checkWebhookTarget } from '../webhooks/webhook-target';
import { jobEndDeliveries } from '../webhooks/job-events';
import type { JobEndDeliveries } from '../jobs/job-store';

interface Webhooks {
	outbox: WebhookOutbox;
	/** Throws a 400 naming `webhook_url` when the address guard refuses it. */
	checkTarget(url: string): Promise<void>;
	/** The delivery of each job's end that asked for one, written in the end's transaction. */
	jobDeliveries: JobEndDeliveries;
}

declare module 'fastify' {
	interface FastifyInstance {
		webhooks: Webhooks;
	}
}

export default fp(
	async (fastify) => {
		const { config } = fastify;
		const outbox = new WebhookOutbox(fastify.outboxStore, {
			allowPrivate: config.webhookAllowPrivate,
			keepFailedMs: config.retentionSeconds * 1000,
			log: fastify.log.child({ component: 'webhooks' }),
			onOutcome: (outcome, count) => fastify.metrics.webhookDelivery(outcome, count),
			currentSecretHash: async (apiKeyId) => (await fastify.keyStore.get(apiKeyId))?.secretHash ?? null,
		});
		fastify.decorate('webhooks', {
			outbox,
			checkTarget: (url: string) => checkWebhookTarget(url, { allowPrivate: config.webhookAllowPrivate, timeoutMs: config.fetchTimeoutMs }),
			jobDeliveries: jobEndDeliveries(outbox),
		});
		fastify.addHook('onReady', async () => outbox.start());
		fastify.addHook('onClose', async () => outbox.stop());
	},
	{ name: 'webhooks', dependencies: ['config', 'engines', 'metrics'] },
);
