/**
 * `fastify.fetchRemote` / `fastify.openRemote`: caller-supplied URLs fetched under the SSRF policy
 * (address check unless --allow-private-urls, time and size limits).
 */
import fp from 'fastify-plugin';
import { createSafeFetcher, type RemoteFetcher, type RemoteOpener } from '../net/safe-fetch';

declare module 'fastify' {
	interface FastifyInstance {
		fetchRemote: RemoteFetcher;
		openRemote: RemoteOpener;
	}
}

export default fp(
	async (fastify) => {
		const fetcher = createSafeFetcher({ allowPrivate: fastify.config.allowPrivateUrls, timeoutMs: fastify.config.fetchTimeoutMs });
		fastify.decorate('fetchRemote', fetcher.fetchRemote);
		fastify.decorate('openRemote', fetcher.openRemote);
	},
	{ name: 'remote-fetch', dependencies: ['config'] },
);
