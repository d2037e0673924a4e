/**
 * One generation, from a validated request to the answer body: the model's provider draws, every
 * image is normalized and re-hosted under our retention (or inlined), and usage is recorded.
 * The time limit and the client going away both stop the provider; they end in different errors.
 */
import { randomInt, randomUUID } from 'node:crypto';
import { ImageGenError } from '../../../core/errors';
import { roundUsd } from '../../../core/units';
import type { GeneratedImage, GenerationResponse } from '../../../core/api';
import { MODELS, SEED_MAX } from '../../../core/models';
import type { GenerationRequest } from '../../../core/schemas';
import { ImageWork } from '../media/image-work';
import type { PriceOverrides } from '../prices';
import type { HostedFiles } from '../storage/hosted-files';
import type { UsageLedger } from '../usage/usage-ledger';
import { inputImageLoader, type InputImageSource } from './input-images';
import { normalizeOutput } from './normalize-output';
import type { GenerationProvider, ProviderImage } from './provider';
import { checkProviderLimits } from './provider-limits';
import type { ProviderTable } from './providers';

/** What a generation needs from the service, each behind its interface. */
export interface GenerationServices {
	providers: ProviderTable;
	prices: PriceOverrides;
	timeoutMs: number;
	inputs: InputImageSource;
	hostedFiles: HostedFiles;
	usageLedger: UsageLedger;
	/** The bounded image queue shared with uploads; its own one (same pixel limit) when not given. */
	imageWork?: ImageWork;
	/** Where a usage line that could not be made durable is reported (it is retried meanwhile). */
	log: { error(details: object, message: string): void };
}

export interface GenerationCaller {
	apiKeyId: string;
	/** Aborted when the client goes away, so providers stop working for nobody. */
	clientGone: AbortSignal;
}

export type GenerationRunner = (generation: GenerationRequest, caller: GenerationCaller) => Promise<GenerationResponse>;

/** How long an answer waits for its usage line to be durable when the ledger is failing. */
const USAGE_WAIT_MS = 2_000;

export function createGenerationRunner(services: GenerationServices): GenerationRunner {
	const { providers, prices, timeoutMs, inputs, hostedFiles, usageLedger } = services;
	const imageWork = services.imageWork ?? new ImageWork({ maxPixels: inputs.maxImagePixels ?? 100_000_000 });

	return async (request, caller) => {
		// Drawn here when absent, so every host gets one and the answer can say which it was.
		const generation = { ...request, seed: request.seed ?? randomInt(0, SEED_MAX + 1) };
		const seed = generation.seed;
		const provider = providers[generation.model];
		checkProviderLimits(generation, provider);
		const signal = AbortSignal.any([caller.clientGone, AbortSignal.timeout(timeoutMs)]);
		const stopped = () => stoppedError(signal, timeoutMs, provider);
		const outputs = await runProvider(provider, generation, { inputs, imageWork }, signal, stopped);

		const data: GeneratedImage[] = [];
		for (const output of outputs) {
			const bytes = await providerBytes(output, provider, inputs, signal, stopped);
			const image = await normalizeOutput(bytes, generation, provider.name, imageWork, signal);
			if (generation.response_format === 'b64_json') {
				data.push({ b64_json: image.bytes.toString('base64'), seed });
			} else {
				const stored = await hostedFiles.putBuffer(image.bytes, image.media, caller.apiKeyId);
				data.push({ url: hostedFiles.publicUrl(stored), expires_at: stored.expiresAt.toISOString(), seed });
			}
		}
		const price = prices[generation.model] ?? MODELS[generation.model].priceUsd;
		const costUsd = roundUsd(price * data.length);
		const recorded = usageLedger
			.record({ apiKeyId: caller.apiKeyId, model: generation.model, images: data.length, costUsd, at: new Date(), requestId: randomUUID() })
			.catch((error: unknown) => services.log.error({ err: error }, 'recording usage failed'));
		// The billing line is durable before the answer, so a crash right after it loses nothing and
		// /v1/usage on any replica already counts it. While the ledger's engine fails, the line stays
		// queued (retried, reported by /healthz) and the answer does not wait longer than this.
		let gaveUp: NodeJS.Timeout | undefined;
		await Promise.race([recorded, new Promise((resolve) => (gaveUp = setTimeout(resolve, USAGE_WAIT_MS)))]);
		clearTimeout(gaveUp);
		return {
			created: Math.floor(Date.now() / 1000),
			model: generation.model,
			output_format: generation.output_format,
			data,
			usage: { images: data.length, cost_usd: costUsd },
		};
	};
}

async function runProvider(
	provider: GenerationProvider,
	generation: GenerationRequest,
	{ inputs, imageWork }: { inputs: InputImageSource; imageWork: ImageWork },
	signal: AbortSignal,
	stopped: () => ImageGenError,
): Promise<ProviderImage[]> {
	const aborted = new Promise<never>((_, reject) => {
		const fail = () => reject(stopped());
		if (signal.aborted) fail();
		else signal.addEventListener('abort', fail, { once: true });
	});
	try {
		const work = provider.generate(generation, { signal, loadInputImage: inputImageLoader(generation, inputs, signal), imageWork });
		const outputs = await Promise.race([work, aborted]);
		if (outputs.length === 0) {
			throw new ImageGenError(502, `The ${provider.name} provider returned no image`, { code: 'upstream_no_output' });
		}
		return outputs;
	} catch (error) {
		if (error instanceof ImageGenError) throw error;
		if (signal.aborted) throw stopped();
		throw new ImageGenError(502, `The ${provider.name} provider failed: ${error instanceof Error ? error.message : String(error)}`, {
			code: 'upstream_failed',
			cause: error,
		});
	}
}

/** Why the signal fired: our time limit (504, like every time-out) or our client leaving. */
function stoppedError(signal: AbortSignal, timeoutMs: number, provider: GenerationProvider): ImageGenError {
	const timedOut = signal.reason instanceof DOMException && signal.reason.name === 'TimeoutError';
	return timedOut
		? new ImageGenError(504, `The ${provider.name} provider did not finish within ${timeoutMs / 1000} s`, { code: 'generation_timeout' })
		: new ImageGenError(502, 'The generation was cancelled because the client went away', { code: 'cancelled' });
}

async function providerBytes(
	output: ProviderImage,
	provider: GenerationProvider,
	inputs: InputImageSource,
	signal: AbortSignal,
	stopped: () => ImageGenError,
): Promise<Buffer> {
	if ('bytes' in output) return output.bytes;
	try {
		return await inputs.fetchRemote(new URL(output.url), { field: 'output', maxBytes: inputs.maxInputImageBytes * 2, signal });
	} catch (error) {
		// A download cut short by our own limit is a time-out, not a broken output.
		if (signal.aborted) throw stopped();
		const reason = error instanceof Error ? error.message : String(error);
		throw new ImageGenError(502, `The ${provider.name} provider's image could not be downloaded: ${reason}`, { code: 'upstream_failed', cause: error });
	}
}
