/**
 * POST /v1/images/generations. Receives the /v1-scoped instance: Bearer auth and rate limiting
 * have run and request.apiKeyId is set. Validation and defaults come from core; the run itself
 * (provider, re-hosting, usage) is generation/run-generation.ts. With an `Idempotency-Key` it runs at
 * most once per key (plugins/idempotency.ts).
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { parseGenerationRequest } from '../../../core/schemas';
import { createGenerationRunner } from '../generation/run-generation';
import { fingerprintJson } from '../idempotency/idempotency';

const ROUTE = '/v1/images/generations';

/** Input images of a generation request are held in memory while the provider works. */
const MAX_INPUT_IMAGE_BYTES = 50 * 1024 * 1024;

export default async function generationRoutes(v1: FastifyInstance): Promise<void> {
	const { config } = v1;
	const runGeneration = createGenerationRunner({
		providers: v1.providers,
		prices: config.priceOverrides,
		timeoutMs: config.generationTimeoutMs,
		inputs: { fetchRemote: v1.fetchRemote, maxInputImageBytes: Math.min(MAX_INPUT_IMAGE_BYTES, config.maxUploadBytes) },
		hostedFiles: v1.hostedFiles,
		usageLedger: v1.usageLedger,
		log: v1.log,
		metrics: v1.metrics,
	});

	v1.post('/images/generations', async (request, reply) => {
		const key = v1.idempotency.keyOf(request);
		const generation = parseGenerationRequest(request.body);
		const clientGone = clientGoneSignal(reply);
		// With a key, a client that gave up will retry: the run goes on so the retry gets its answer.
		const stopWhen = key === undefined ? clientGone : new AbortController().signal;
		// Usage is recorded inside the run: a replayed answer is never charged again.
		return v1.idempotency.send(request, reply, {
			key,
			fingerprint: () => fingerprintJson(request.method, ROUTE, request.body),
			run: () => runGeneration(generation, { apiKeyId: request.apiKeyId, clientGone: stopWhen }),
			signal: clientGone,
		});
	});
}

/** Aborted when our client goes away, so providers stop working for nobody. */
function clientGoneSignal(reply: FastifyReply): AbortSignal {
	const client = new AbortController();
	reply.raw.once('close', () => {
		if (!reply.raw.writableFinished) client.abort(new Error('client closed the connection'));
	});
	return client.signal;
}
