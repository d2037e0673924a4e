/** `fastify.providers`: the generation provider of every model, built once at start. */
import fp from 'fastify-plugin';
import type { ProviderTable } from '../generation/providers';

declare module 'fastify' {
	interface FastifyInstance {
		providers: ProviderTable;
	}
}

export default fp<{ providers: ProviderTable }>(
	async (fastify, options) => {
		fastify.decorate('providers', options.providers);
	},
	{ name: 'providers' },
);
