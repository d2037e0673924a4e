/** The parsed configuration, parsed once (config/parse-config.ts) and read by every plugin and route as `fastify.config`. */
import fp from 'fastify-plugin';
import type { ServiceConfig } from '../config';

declare module 'fastify' {
	interface FastifyInstance {
		config: ServiceConfig;
	}
}

export default fp<{ config: ServiceConfig }>(
	async (fastify, options) => {
		fastify.decorate('config', options.config);
	},
	{ name: 'config' },
);
