/** `fastify.providers` and `fastify.videoProviders`: the provider of every model, built once at start. */
import fp from 'fastify-plugin';
import type { ProviderTable } from '../generation/providers';
import type { VideoProviderTable } from '../video/video-providers';

declare module 'fastify' {
	interface FastifyInstance {
		providers: ProviderTable;
		videoProviders: VideoProviderTable;
	}
}

export default fp<{ providers: ProviderTable; videoProviders: VideoProviderTable }>(
	async (fastify, options) => {
		fastify.decorate('providers', options.providers);
		fastify.decorate('videoProviders', options.videoProviders);
	},
	{ name: 'providers' },
);
