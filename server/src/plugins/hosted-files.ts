/**
 * `fastify.hostedFiles`: the storage and metadata engines combined into hosted files, plus the
 * sweeper of expired files, idempotency entries, ended jobs and provenance records past their keeping
 * (every min(60 s, retention / 2)), which runs
 * from ready until close.
 */
import fp from 'fastify-plugin';
import { ImageWork } from '../media/image-work';
import { HostedFiles } from '../storage/hosted-files';
import { startSweeper, sweepInterval, type Sweeper } from '../storage/sweeper';

declare module 'fastify' {
	interface FastifyInstance {
		hostedFiles: HostedFiles;
	}
}

export interface HostedFilesPluginOptions {
	/** Base of public URLs; a function because the port is known only after listening. */
	publicBaseUrl: () => string;
}

export default fp<HostedFilesPluginOptions>(
	async (fastify, options) => {
		const hostedFiles = new HostedFiles({
			storage: fastify.storage,
			metadata: fastify.fileMetadata,
			retentionSeconds: fastify.config.retentionSeconds,
			publicBaseUrl: options.publicBaseUrl,
			imageWork: new ImageWork({ maxPixels: fastify.config.maxImagePixels }),
			marker: fastify.config.provenance.enabled ? fastify.provenance.marker : undefined,
		});
		fastify.decorate('hostedFiles', hostedFiles);

		let sweeper: Sweeper | null = null;
		fastify.addHook('onReady', async () => {
			const idempotencyEntries = { sweep: () => fastify.idempotencyStore.sweep() };
			// Jobs are kept as long as the retention from their end, as their images are.
			const endedJobs = { sweep: () => fastify.jobStore.sweep(new Date(Date.now() - fastify.config.retentionSeconds * 1000)) };
			const provenanceRecords = { sweep: () => fastify.provenanceRecords.sweep() };
			sweeper = startSweeper([hostedFiles, idempotencyEntries, endedJobs, provenanceRecords], sweepInterval(fastify.config.retentionSeconds), {
				onError: (error) => fastify.log.error({ err: error }, 'sweeping expired files, idempotency entries, jobs or provenance records failed'),
				onFinished: (seconds, succeeded) => fastify.metrics.sweep({ seconds, succeeded }),
			});
		});
		fastify.addHook('onClose', async () => {
			await sweeper?.stop();
		});
	},
	{ name: 'hosted-files', dependencies: ['config', 'engines', 'metrics', 'provenance'] },
);
