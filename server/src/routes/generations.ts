/**
 * POST /v1/images/generations. Receives the /v1-scoped instance: Bearer auth and rate limiting
 * have run and request.apiKeyId is set. Validation and defaults come from core; the model's
 * provider draws; every image we answer with is re-hosted in our store under our retention.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { ImageGenError } from '../../../core/errors';
import type { GeneratedImage, GenerationResponse } from '../../../core/api';
import { MODELS } from '../../../core/models';
import { parseGenerationRequest, type GenerationRequest } from '../../../core/schemas';
import { inputImageLoader, type InputImageSource } from '../generation/input-images';
import { normalizeOutput } from '../generation/normalize-output';
import type { GenerationProvider, ProviderImage } from '../generation/provider';

/** Input images of a generation request are held in memory while the provider works. */
const MAX_INPUT_IMAGE_BYTES = 50 * 1024 * 1024;

export default async function generationRoutes(v1: FastifyInstance): Promise<void> {
	const { providers, hostedFiles, usageLedger, config } = v1;
	const prices = config.priceOverrides;
	const timeoutMs = config.generationTimeoutMs;
	const context: InputImageSource = { fetchRemote: v1.fetchRemote, maxInputImageBytes: Math.min(MAX_INPUT_IMAGE_BYTES, config.maxUploadBytes) };

	v1.post('/images/generations', async (request, reply) => {
		const generation = parseGenerationRequest(request.body);
		const provider = providers[generation.model];
		const signal = requestSignal(reply, timeoutMs);
		const outputs = await runProvider(provider, generation, context, signal, timeoutMs);

		const data: GeneratedImage[] = [];
		for (const output of outputs) {
			const bytes = await providerBytes(output, provider, context, signal);
			const image = await normalizeOutput(bytes, generation, provider.name);
			if (generation.response_format === 'b64_json') {
				data.push({ b64_json: image.bytes.toString('base64') });
			} else {
				const stored = await hostedFiles.putBuffer(image.bytes, image.media, request.apiKeyId);
				data.push({ url: hostedFiles.publicUrl(stored), expires_at: stored.expiresAt.toISOString() });
			}
		}
		const price = prices[generation.model] ?? MODELS[generation.model].priceUsd;
		// Rounded so that 3 × 0.0035 reads 0.0105, not 0.010499999999999999.
		const costUsd = Math.round(price * data.length * 1e6) / 1e6;
		// Counted at once; the ledger makes the line durable in the background and never drops it
		// (a write failure is retried and reported by /healthz), so the answer does not wait for it.
		usageLedger
			.record({ apiKeyId: request.apiKeyId, model: generation.model, images: data.length, costUsd, at: new Date(), requestId: randomUUID() })
			.catch((error: unknown) => request.log.error({ err: error }, 'recording usage failed'));
		const body: GenerationResponse = {
			created: Math.floor(Date.now() / 1000),
			model: generation.model,
			output_format: generation.output_format,
			data,
			usage: { images: data.length, cost_usd: costUsd },
		};
		return reply.send(body);
	});
}

/** Aborts when the time limit passes or our client goes away, so providers stop working for nobody. */
function requestSignal(reply: FastifyReply, timeoutMs: number): AbortSignal {
	const client = new AbortController();
	reply.raw.once('close', () => {
		if (!reply.raw.writableFinished) client.abort(new Error('client closed the connection'));
	});
	return AbortSignal.any([client.signal, AbortSignal.timeout(timeoutMs)]);
}

async function runProvider(
	provider: GenerationProvider,
	generation: GenerationRequest,
	context: InputImageSource,
	signal: AbortSignal,
	timeoutMs: number,
): Promise<ProviderImage[]> {
	const aborted = new Promise<never>((_, reject) => {
		const fail = () => reject(timeoutError(signal, timeoutMs, provider));
		if (signal.aborted) fail();
		else signal.addEventListener('abort', fail, { once: true });
	});
	try {
		const work = provider.generate(generation, { signal, loadInputImage: inputImageLoader(generation, context, signal) });
		const outputs = await Promise.race([work, aborted]);
		if (outputs.length === 0) {
			throw new ImageGenError(502, `The ${provider.name} provider returned no image`, { code: 'upstream_no_output' });
		}
		return outputs;
	} catch (error) {
		if (error instanceof ImageGenError) throw error;
		if (signal.aborted) throw timeoutError(signal, timeoutMs, provider);
		throw new ImageGenError(502, `The ${provider.name} provider failed: ${error instanceof Error ? error.message : String(error)}`, {
			code: 'upstream_failed',
			cause: error,
		});
	}
}

function timeoutError(signal: AbortSignal, timeoutMs: number, provider: GenerationProvider): ImageGenError {
	const timedOut = signal.reason instanceof DOMException && signal.reason.name === 'TimeoutError';
	return timedOut
		? new ImageGenError(504, `The ${provider.name} provider did not finish within ${timeoutMs / 1000} s`, { code: 'generation_timeout' })
		: new ImageGenError(502, 'The generation was cancelled because the client went away', { code: 'cancelled' });
}

async function providerBytes(output: ProviderImage, provider: GenerationProvider, context: InputImageSource, signal: AbortSignal): Promise<Buffer> {
	if ('bytes' in output) return output.bytes;
	try {
		return await context.fetchRemote(new URL(output.url), { field: 'output', maxBytes: context.maxInputImageBytes * 2, signal });
	} catch (error) {
		const reason = error instanceof Error ? error.message : String(error);
		throw new ImageGenError(502, `The ${provider.name} provider's image could not be downloaded: ${reason}`, { code: 'upstream_failed', cause: error });
	}
}
