/**
 * `fastify.metrics`: the service's counters (metrics/service-metrics.ts), exported in
 * Prometheus' format by routes/metrics.ts. Every answer is counted here under its route pattern
 * (`/files/:id`, never the URL asked for), so no file id or key ever becomes a label value. What is
 * read at each scrape (metrics/scrape-gauges.ts) comes from the engines and the data dir.
 */
import fp from 'fastify-plugin';
import { PrometheusMetrics, UNMATCHED_ROUTE } from '../metrics/prometheus-metrics';
import type { ServiceMetrics } from '../metrics/service-metrics';

interface MetricsExposition {
	readonly contentType: string;
	/** Everything in Prometheus' text format. */
	text(): Promise<string>;
}

declare module 'fastify' {
	interface FastifyInstance {
		metrics: ServiceMetrics & MetricsExposition;
	}
}

/** Methods Fastify routes; anything else is counted as one value. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

export default fp(
	async (fastify) => {
		const { config, fileMetadata } = fastify;
		const metrics = new PrometheusMetrics({
			ledgerPending: () => fastify.usageLedger.health().pending,
			jobCounts: () => fastify.jobStore.counts(),
			outboxPending: () => fastify.outboxStore.pendingCount(),
			databasePing: fileMetadata.ping ? () => fileMetadata.ping!() : undefined,
			// Only the embedded database has a state of its own; PostgreSQL's is imagegen_database_up.
			databaseCondition: config.databaseUrl === undefined && fileMetadata.condition ? () => fileMetadata.condition!() : undefined,
			dataDir: config.dataDir,
			log: fastify.log.child({ component: 'metrics' }),
		});
		fastify.decorate('metrics', metrics);
		fastify.addHook('onResponse', async (request, reply) => {
			metrics.http({
				method: METHODS.has(request.method) ? request.method : 'OTHER',
				// routeOptions.url is the pattern of the matched route, undefined when none matched.
				route: request.routeOptions.url ?? UNMATCHED_ROUTE,
				status: reply.statusCode,
				seconds: reply.elapsedTime / 1000,
			});
		});
	},
	{ name: 'metrics', dependencies: ['engines'] },
);
