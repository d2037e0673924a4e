/** `fastify.uploads`: storing uploads (uploads/uploads.ts), shared by POST /v1/uploads and the MCP endpoint. */
import fp from 'fastify-plugin';
import { UploadService, type Uploads } from '../uploads/uploads';

declare module 'fastify' {
	interface FastifyInstance {
		uploads: Uploads;
	}
}

export default fp(
	async (fastify) => {
		const { maxUploadBytes, retentionSeconds } = fastify.config;
		fastify.decorate('uploads', new UploadService({ store: fastify.hostedFiles, openRemote: fastify.openRemote, maxUploadBytes, retentionSeconds, metrics: fastify.metrics }));
	},
	{ name: 'uploads', dependencies: ['config', 'remote-fetch', 'hosted-files', 'metrics'] },
);
