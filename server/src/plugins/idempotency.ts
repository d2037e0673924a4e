/**
 * `fastify.idempotency`: runs a POST at most once per `Idempotency-Key` of an API key and sends its
 * answer, through the configured IdempotencyStore (embedded or PostgreSQL, so a repeat on another
 * replica replays too). Without the header the request simply runs.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { IDEMPOTENCY_KEY_HEADER, parseIdempotencyKey, REPLAYED_HEADER, runIdempotent } from '../idempotency/idempotency';

declare module 'fastify' {
	interface FastifyInstance {
		idempotency: Idempotency;
	}
}

export interface Idempotency {
	/** The request's key, or undefined without the header; a malformed key is a 400. */
	keyOf(request: FastifyRequest): string | undefined;
	/**
	 * Sends what `run` answers (as JSON, status 200). With `key`, a repeat of the same request
	 * (same `fingerprint`) gets the first answer byte for byte instead of running again.
	 */
	send(
		request: FastifyRequest,
		reply: FastifyReply,
		options: { key: string | undefined; fingerprint: () => string; run: () => Promise<unknown>; signal?: AbortSignal },
	): Promise<FastifyReply>;
}

const JSON_TYPE = 'application/json; charset=utf-8';
/** A repeat waits this long for a running first request before it is told to retry (409). */
const MAX_WAIT_MS = 10_000;
/** Beyond the slowest a request may take, before its claim counts as left by a dead process. */
const LEASE_MARGIN_MS = 60_000;

export default fp(
	async (fastify) => {
		const { config } = fastify;
		const leaseMs = config.generationTimeoutMs + config.fetchTimeoutMs + LEASE_MARGIN_MS;
		// Never as long as a generation may take: a client that retried is better told to come back.
		const waitMs = Math.min(MAX_WAIT_MS, config.generationTimeoutMs / 2);

		const idempotency: Idempotency = {
			keyOf: (request) => parseIdempotencyKey(request.headers[IDEMPOTENCY_KEY_HEADER]),
			async send(request, reply, options) {
				if (options.key === undefined) return reply.type(JSON_TYPE).send(JSON.stringify(await options.run()));
				const answer = await runIdempotent({
					store: fastify.idempotencyStore,
					apiKeyId: request.apiKeyId,
					key: options.key,
					fingerprint: options.fingerprint(),
					retentionSeconds: config.retentionSeconds,
					leaseMs,
					waitMs,
					signal: options.signal,
					run: async () => ({ status: 200, contentType: JSON_TYPE, body: JSON.stringify(await options.run()) }),
					onStoreError: (error) => request.log.error({ err: error }, 'remembering an idempotent answer failed'),
				});
				if (answer.replayed) reply.header(REPLAYED_HEADER, 'true');
				return reply.status(answer.status).type(answer.contentType).send(answer.body);
			},
		};
		fastify.decorate('idempotency', idempotency);
	},
	{ name: 'idempotency', dependencies: ['config', 'backends'] },
);
