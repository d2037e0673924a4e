/**
 * The MCP tools on generations: draw an image (a job like every generation, answered once it
 * ends), and describe or cancel one of the caller's generations.
 */
import type { FastifyInstance } from 'fastify';
import { ImageGenError, invalidField } from '../../../core/errors';
import type { ModelId } from '../../../core/models';
import { parseGenerationRequest } from '../../../core/schemas';
import { foundJob, generationObject } from '../jobs/generation-object';
import type { Job } from '../jobs/job-store';
import type { GenerationAnswer } from '../generation/run-generation';
import { idArgument, type ToolCaller, type ToolDefinition } from './tool-definition';
import { GENERATION_DEFAULTS_TEXT, GENERATION_ID_INPUT_SCHEMA, OPENAI_ONLY, generateImageInputSchema } from './tool-schemas';

const MIME_TYPES: Record<string, string> = { png: 'image/png', jpeg: 'image/jpeg', webp: 'image/webp' };

export function generateImageTool(service: FastifyInstance, models: ModelId[]): ToolDefinition {
	const { config } = service;
	return {
		name: 'generate_image',
		title: 'Generate an image',
		description: `Draws one image from a prompt with the chosen model and hosts it; answers its public URL (valid until expires_at), the seed, the model, the MIME type and the cost in USD. ${GENERATION_DEFAULTS_TEXT} Call list_models for limits and prices.`,
		inputSchema: generateImageInputSchema(config.priceOverrides, models),
		annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
		async run(args, caller) {
			if ('response_format' in args) {
				throw invalidField('response_format', "'response_format' is not an argument of this tool: it always answers the image's URL", 'unknown_field');
			}
			const foreign = Object.keys(args).find((name) => OPENAI_ONLY.has(name));
			if (foreign) throw invalidField(foreign, `'${foreign}' is not an argument of this tool: it draws one image`, 'unknown_field');
			const generation = parseGenerationRequest({ ...args, response_format: 'url' });
			// A job like every generation: it can be fetched or canceled with the tools below.
			const answer = (await (await service.jobs.start(generation, caller)).answer) as GenerationAnswer;
			const image = answer.data[0]!;
			if (!('url' in image)) throw new ImageGenError(502, 'The generation answered no URL', { code: 'upstream_failed' });
			return {
				url: image.url,
				expires_at: image.expires_at,
				seed: image.seed,
				model: answer.model,
				mime_type: MIME_TYPES[answer.output_format] ?? `image/${answer.output_format}`,
				cost_usd: answer.usage.cost_usd,
			};
		},
	};
}

export function getGenerationTool(service: FastifyInstance): ToolDefinition {
	return generationTool(
		service,
		'get_generation',
		'Describe a generation',
		"Answers a generation of this API key by its id (gen_… or video_…): status (queued, running, succeeded, failed, canceled), its result once it succeeded (each image's URL, expiry and seed; a video's MP4 URL, length and cost) or its error.",
		{ readOnlyHint: true, openWorldHint: false },
		(id, caller) => service.jobStore.get(id, caller.apiKeyId),
	);
}

export function cancelGenerationTool(service: FastifyInstance): ToolDefinition {
	return generationTool(
		service,
		'cancel_generation',
		'Cancel a generation',
		'Cancels a generation of this API key that is still running; nothing is charged for it. Answers the generation as get_generation does (its final state if it had ended).',
		{ readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
		(id, caller) => service.jobs.cancel(id, caller.apiKeyId),
	);
}

/** A tool on one generation of the caller's key, found (or canceled) by `find`; the same 404 for an id of no job of the key. */
function generationTool(
	service: FastifyInstance,
	name: string,
	title: string,
	description: string,
	annotations: ToolDefinition['annotations'],
	find: (id: string, caller: ToolCaller) => Promise<Job | null>,
): ToolDefinition {
	return {
		name,
		title,
		description,
		inputSchema: GENERATION_ID_INPUT_SCHEMA,
		annotations,
		async run(args, caller) {
			const job = await foundJob(idArgument(args, 'the generation id (gen_…)'), (id) => find(id, caller));
			return generationForTool(service, job, caller.apiKeyId);
		},
	};
}

/**
 * The generation object, each inline image answered by its stored file's URL instead of base64
 * (a model's context is no place for image bytes).
 */
async function generationForTool(service: FastifyInstance, job: Job, apiKeyId: string): Promise<Record<string, unknown>> {
	const generation = await generationObject(job);
	if (!generation.result || !('data' in generation.result)) return { ...generation };
	const inline = [...(job.result?.inlineFiles ?? [])];
	const data = [];
	for (const image of generation.result.data) {
		if (!('b64_json' in image)) {
			data.push(image);
			continue;
		}
		const marks = withoutBase64(image);
		const file = await service.hostedFiles.info(inline.shift()!.fileId, apiKeyId);
		data.push(file ? { url: service.hostedFiles.publicUrl(file), expires_at: file.expiresAt.toISOString(), ...marks } : { expired: true, ...marks });
	}
	return { ...generation, result: { ...generation.result, data } };
}

function withoutBase64<Image extends { b64_json: unknown }>(image: Image): Omit<Image, 'b64_json'> {
	const marks: Partial<Image> = { ...image };
	delete marks.b64_json;
	return marks as Omit<Image, 'b64_json'>;
}
