/**
 * `fastify.jobs`: every generation as a durable job (jobs/job-runner.ts), around the shared
 * generation runner. From ready on, this process takes over the running jobs of processes that
 * stopped (at once, then every lease), and on close it waits for the jobs it runs to end.
 */
import { buffer } from 'node:stream/consumers';
import fp from 'fastify-plugin';
import { isModelId } from '../../../core/models';
import { isVideoModelId } from '../../../core/video-models';
import { JobRunner } from '../jobs/job-runner';
import type { JobEndListener } from '../jobs/job-store';

declare module 'fastify' {
	interface FastifyInstance {
		jobs: JobRunner;
	}
}

interface JobsPluginOptions {
	/** Told when a job ends, besides the webhooks' outbox. */
	listeners?: readonly JobEndListener[];
}

export default fp<JobsPluginOptions>(
	async (fastify, options) => {
		const { hostedFiles } = fastify;
		const jobs = new JobRunner({
			store: fastify.jobStore,
			runGeneration: fastify.runGeneration,
			runVideo: fastify.runVideo,
			hostOf: (model) => (isVideoModelId(model) ? fastify.videoProviders[model] : isModelId(model) ? fastify.providers[model] : undefined),
			listeners: options.listeners ?? [],
			deliveries: fastify.webhooks.jobDeliveries,
			inlineBase64: async (fileId, apiKeyId) => {
				const file = await hostedFiles.info(fileId, apiKeyId);
				const bytes = file && (await hostedFiles.openWhole(file));
				if (!bytes) throw new Error(`the stored image ${fileId} of a job is gone`);
				return (await buffer(bytes)).toString('base64');
			},
			log: fastify.log,
			leaseMs: fastify.config.jobLeaseMs,
		});
		fastify.decorate('jobs', jobs);

		let recovering: NodeJS.Timeout | undefined;
		const recover = () =>
			jobs.recover().catch((error: unknown) => fastify.log.error({ err: error }, 'taking over the jobs of a stopped process failed'));
		fastify.addHook('onReady', async () => {
			void recover();
			recovering = setInterval(recover, fastify.config.jobLeaseMs);
			recovering.unref();
		});
		fastify.addHook('onClose', async () => {
			clearInterval(recovering);
			await jobs.close();
		});
	},
	{ name: 'jobs', dependencies: ['engines', 'providers', 'hosted-files', 'generation', 'videos', 'webhooks'] },
);
