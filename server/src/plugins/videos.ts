/**
 * `fastify.runVideo`: the one video runner of the service (video/run-video.ts), shared by every way
 * in (POST /v1/videos, the MCP endpoint) and run as jobs, so each obeys the caller's key policy and
 * records usage the same way. Its work files go under the data dir, on the disk hosted files go to.
 */
import { join } from 'node:path';
import fp from 'fastify-plugin';
import { createVideoRunner, type VideoRunner } from '../video/run-video';
import { removeLeftWorkFolders } from '../video/work-folders';
import { ownFileReader } from '../storage/own-file-inputs';

declare module 'fastify' {
	interface FastifyInstance {
		runVideo: VideoRunner;
	}
}

/** An input (a first frame, an audio track) is held in memory while the host works. */
const MAX_VIDEO_INPUT_BYTES = 50 * 1024 * 1024;
/** Beyond a video's time limit before its work folder counts as left; also how often they are looked for. */
const WORK_FOLDER_MARGIN_MS = 60 * 60 * 1000;

export default fp(
	async (fastify) => {
		const { config } = fastify;
		const run = createVideoRunner({
			providers: fastify.videoProviders,
			prices: config.priceOverrides,
			timeoutMs: config.videoTimeoutMs,
			maxVideoBytes: config.maxVideoBytes,
			inputs: {
				fetchRemote: fastify.fetchRemote,
				maxInputImageBytes: Math.min(MAX_VIDEO_INPUT_BYTES, config.maxUploadBytes),
				maxImagePixels: config.maxImagePixels,
				readOwnFile: ownFileReader(fastify.hostedFiles),
			},
			openRemote: fastify.openRemote,
			workRoot: join(config.dataDir, 'work'),
			hostedFiles: fastify.hostedFiles,
			usageLedger: fastify.usageLedger,
			budgets: fastify.budgets,
			log: fastify.log,
			metrics: fastify.metrics,
			provenance: fastify.provenance.marker,
		});
		// A webhook target the address guard refuses is the request's 400, before anything is charged;
		// a job taken over after a restart is not checked again (plugins/generation.ts says why).
		const runVideo: VideoRunner = async (request, caller) => {
			if (request.webhook_url !== undefined && !caller.resume) await fastify.webhooks.checkTarget(request.webhook_url);
			return run(request, caller);
		};
		fastify.decorate('runVideo', runVideo);

		// What a process killed mid-job left in work/: older than any job runs, so no live job's.
		const workRoot = join(config.dataDir, 'work');
		const sweepWork = () =>
			removeLeftWorkFolders(workRoot, config.videoTimeoutMs + WORK_FOLDER_MARGIN_MS).catch((error: unknown) => fastify.log.error({ err: error }, 'removing left video work folders failed'));
		let sweeping: NodeJS.Timeout | undefined;
		fastify.addHook('onReady', async () => {
			void sweepWork();
			sweeping = setInterval(sweepWork, WORK_FOLDER_MARGIN_MS);
			sweeping.unref();
		});
		fastify.addHook('onClose', async () => clearInterval(sweeping));
	},
	{ name: 'videos', dependencies: ['config', 'engines', 'providers', 'remote-fetch', 'hosted-files', 'metrics', 'provenance', 'webhooks', 'generation'] },
);
