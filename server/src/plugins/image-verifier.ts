/**
 * `fastify.imageVerifier`: checking an image for its C2PA manifest and its watermark, and naming
 * the generation the watermark leads to (provenance/image-verifier.ts), shared by
 * POST /v1/provenance/verify and the MCP tool `verify_image`.
 */
import fp from 'fastify-plugin';
import { ImageVerifier } from '../provenance/image-verifier';
import { ownFileReader } from '../storage/own-file-inputs';

declare module 'fastify' {
	interface FastifyInstance {
		imageVerifier: ImageVerifier;
	}
}

export default fp(
	async (fastify) => {
		const verifier = new ImageVerifier({
			records: fastify.provenanceRecords,
			imageWork: fastify.hostedFiles.imageWork,
			openRemote: fastify.openRemote,
			readOwnFile: ownFileReader(fastify.hostedFiles),
			maxUploadBytes: fastify.config.maxUploadBytes,
		});
		fastify.decorate('imageVerifier', verifier);
		fastify.addHook('onClose', () => verifier.close());
	},
	{ name: 'image-verifier', dependencies: ['config', 'engines', 'remote-fetch', 'hosted-files'] },
);
