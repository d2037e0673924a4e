/**
 * `fastify.webhooks`: the outbox every job ending and budget alert is enqueued in, its delivery
 * loop (started with the service, stopped before the engines close), and the request-time check
 * of a `webhook_url`.
 */
import fp from 'fastify-plugin';
import { WebhookOutbox } from '../webhooks/outbox';
import { checkWebhookTarget } from '../webhooks/webhook-target';
import { webhookJobListener } from '../webhooks/job-events';
import type { JobEndListener } from '../jobs/job-store';

interface Webhooks {
	outbox: WebhookOutbox;
	/** Throws a 400 naming `webhook_url` when the address guard refuses it. */
	checkTarget(url: string): Promise<void>;
	/** Told of each job's end: enqueues its delivery when the job asked for one. */
	jobListener: JobEndListener;
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
			jobListener: webhookJobListener(outbox),
		});
		fastify.addHook('onReady', async () => outbox.start());
		fastify.addHook('onClose', async () => outbox.stop());
	},
	{ name: 'webhooks', dependencies: ['config', 'engines', 'metrics'] },
);
