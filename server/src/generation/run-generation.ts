/**
 * One generation, from a validated request to the answer body: the caller's key policy is
 * enforced (allowed models, budget: generation/key-policy.ts), the model's provider draws, every
 * image is normalized and re-hosted under our retention (or inlined), and usage is recorded.
 * Every way in (HTTP, MCP) runs generations through this, so every one obeys the key's limits.
 * The time limit and the client going away both stop the provider; they end in different errors.
 */
import { randomInt, randomUUID } from 'node:crypto';
import { ImageGenError } from '../../../core/errors';
import { roundUsd } from '../../../core/units';
import type { GeneratedImage, GenerationResponse } from '../../../core/api';
import { MODELS, SEED_MAX } from '../../../core/models';
import type { GenerationRequest } from '../../../core/schemas';
import { ImageWork } from '../media/image-work';
import type { ApiKeyPolicy } from '../auth';
import type { PriceOverrides } from '../prices';
import type { HostedFiles } from '../storage/hosted-files';
import type { UsageLedger } from '../usage/usage-ledger';
import { inputImageLoader, type InputImageSource } from './input-images';
import { checkModelAllowed, type BudgetGate, type BudgetHold } from './key-policy';
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
	/** Reserves a budgeted key's price before the provider runs. */
	budgets: BudgetGate;
	/** Where a usage line that could not be made durable is reported (it is retried meanwhile). */
	log: { error(details: object, message: string): void };
}

export interface GenerationCaller {
	apiKeyId: string;
	/** The caller's key: its models and budget are enforced here (request.apiKey). */
	apiKey: ApiKeyPolicy;
	/** Aborted when the client goes away, so providers stop working for nobody. */
	clientGone: AbortSignal;
}

export type GenerationRunner = (generation: GenerationRequest, caller: GenerationCaller) => Promise<GenerationResponse>;

/** How long an answer waits for its usage line to be durable when the ledger is failing. */
const USAGE_WAIT_MS = 2_000;

export function createGenerationRunner(services: GenerationServices): GenerationRunner {
	const { providers, prices, timeoutMs, inputs, hostedFiles, usageLedger, budgets } = services;
	const imageWork = services.imageWork ?? new ImageWork({ maxPixels: inputs.maxImagePixels ?? 100_000_000 });

	return async (request, caller) => {
		// Drawn here when absent, so every host gets one and the answer can say which it was.
		const generation = { ...request, seed: request.seed ?? randomInt(0, SEED_MAX + 1) };
		const seed = generation.seed;
		checkModelAllowed(caller.apiKey, generation.model);
		const provider = providers[generation.model];
		checkProviderLimits(generation, provider);
		const price = prices[generation.model] ?? MODELS[generation.model].priceUsd;
		const hold = await budgets.admit(caller.apiKey, price);
		const data: GeneratedImage[] = [];
		try {
			const signal = AbortSignal.any([caller.clientGone, AbortSignal.timeout(timeoutMs)]);
			const stopped = () => stoppedError(signal, timeoutMs, provider);
			const outputs = await runProvider(provider, generation, { inputs, imageWork }, signal, stopped);
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
		} catch (error) {
			await releaseHold(hold, services.log);
			throw error;
		}
		const costUsd = roundUsd(price * data.length);
		await settleHold(hold, costUsd, services.log);
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

/** A failed generation costs nothing; a release that fails only lets the reservation run out its lease. */
async function releaseHold(hold: BudgetHold | null, log: GenerationServices['log']): Promise<void> {
	await hold?.release().catch((error: unknown) => log.error({ err: error }, 'releasing a budget reservation failed'));
}

/** The images exist: the answer goes out even if the charge cannot be written (reported for the operator). */
async function settleHold(hold: BudgetHold | null, costUsd: number, log: GenerationServices['log']): Promise<void> {
	await hold?.settle(costUsd).catch((error: unknown) => log.error({ err: error, costUsd }, 'charging a budget failed'));
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
