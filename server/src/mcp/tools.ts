/**
 * The MCP tools: each calls the service code the REST routes call (the shared generation runner,
 * uploads, a key's own files, the catalog) as the calling API key, and answers a compact JSON
 * object both as `structuredContent` and as text. Images are always hosted and answered by URL,
 * never as base64. A refused call is a tool result with `isError: true` carrying the API's error
 * body, whose `param` names the field, so a model can correct its arguments.
 */
import type { FastifyInstance } from 'fastify';
import { ImageGenError, invalidField } from '../../../core/errors';
import type { ModelId } from '../../../core/models';
import { parseGenerationRequest } from '../../../core/schemas';
import type { ApiKeyPolicy } from '../keys/authenticate';
import { toApiError } from '../http/error-handler';
import { catalogFor, catalogInForce } from '../generation/catalog-in-force';
import { deleteOwnedFile, ownedFile } from '../storage/owned-files';
import { foundJob, generationObject } from '../jobs/generation-object';
import type { Job } from '../jobs/job-store';
import {
	EMPTY_INPUT_SCHEMA,
	FILE_ID_INPUT_SCHEMA,
	GENERATION_DEFAULTS_TEXT,
	GENERATION_ID_INPUT_SCHEMA,
	OPENAI_ONLY,
	generateImageInputSchema,
	uploadFileInputSchema,
} from './tool-schemas';
import type { JsonSchema } from '../schema-docs/json-schema';

export interface ToolCaller {
	apiKeyId: string;
	apiKey: ApiKeyPolicy;
	/** Aborted when the MCP client goes away. */
	clientGone: AbortSignal;
}

interface ToolResult {
	[key: string]: unknown;
	content: { type: 'text'; text: string }[];
	structuredContent?: Record<string, unknown>;
	isError?: boolean;
}

interface ToolDefinition {
	name: string;
	title: string;
	description: string;
	inputSchema: JsonSchema;
	annotations: { readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean; openWorldHint?: boolean };
	run(args: Record<string, unknown>, caller: ToolCaller): Promise<Record<string, unknown>>;
}

const MIME_TYPES: Record<string, string> = { png: 'image/png', jpeg: 'image/jpeg', webp: 'image/webp' };

/** The tools as the calling key sees them: a key limited to some models is offered only those. */
export function toolsFor(service: FastifyInstance, apiKey: ApiKeyPolicy): ToolDefinition[] {
	const { config } = service;
	const catalog = catalogInForce(config.priceOverrides, service.providers);
	const models = (apiKey.models ?? catalog.data.map((model) => model.id)) as ModelId[];
	return [
		{
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
				const answer = await (await service.jobs.start(generation, caller)).answer;
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
		},
		{
			name: 'upload_file',
			title: 'Host an image or video',
			description:
				'Stores an image or video at a public URL for a limited time, optionally converted (output_format) or scaled down (max_side, max_bytes). Answers its id, URL, media type, MIME type, size and expiry. Use the URL as an input image of generate_image.',
			inputSchema: uploadFileInputSchema(config.retentionSeconds),
			annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
			async run(args, caller) {
				const stored = await service.uploads.fromJson(args, caller.apiKeyId);
				const isVideo = 'videoUrl' in stored;
				return {
					id: stored.id,
					url: isVideo ? stored.videoUrl : stored.imageUrl,
					media_type: isVideo ? 'video' : 'image',
					mime_type: stored.mimeType,
					size_bytes: stored.sizeBytes,
					expires_at: stored.expiresAt,
				};
			},
		},
		{
			name: 'get_file',
			title: 'Describe a hosted file',
			description: 'Answers the URL, media type, MIME type, size and expiry of a file this API key stored (by upload or generation).',
			inputSchema: FILE_ID_INPUT_SCHEMA,
			annotations: { readOnlyHint: true, openWorldHint: false },
			async run(args, caller) {
				const file = await ownedFile(service.hostedFiles, idArgument(args), caller.apiKeyId);
				return {
					id: file.id,
					url: service.hostedFiles.publicUrl(file),
					media_type: file.kind,
					mime_type: file.mimeType,
					size_bytes: file.size,
					expires_at: file.expiresAt.toISOString(),
				};
			},
		},
		{
			name: 'delete_file',
			title: 'Delete a hosted file',
			description: 'Takes a file this API key stored offline at once and removes its bytes.',
			inputSchema: FILE_ID_INPUT_SCHEMA,
			annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
			async run(args, caller) {
				const id = idArgument(args);
				await deleteOwnedFile(service.hostedFiles, service.idempotencyStore, id, caller.apiKeyId);
				return { id, deleted: true };
			},
		},
		generationTool(
			service,
			'get_generation',
			'Describe a generation',
			"Answers a generation of this API key by its id (gen_…): status (queued, running, succeeded, failed, canceled), its result once it succeeded (each image's URL, expiry and seed) or its error.",
			{ readOnlyHint: true, openWorldHint: false },
			(id, caller) => service.jobStore.get(id, caller.apiKeyId),
		),
		generationTool(
			service,
			'cancel_generation',
			'Cancel a generation',
			'Cancels a generation of this API key that is still running; nothing is charged for it. Answers the generation as get_generation does (its final state if it had ended).',
			{ readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
			(id, caller) => service.jobs.cancel(id, caller.apiKeyId),
		),
		{
			name: 'list_models',
			title: 'List the models',
			description: 'The models this API key may use, with the fields, aspect ratios, formats, limits and price per image of each.',
			inputSchema: EMPTY_INPUT_SCHEMA,
			annotations: { readOnlyHint: true, openWorldHint: false },
			async run() {
				return catalogFor(catalog, models);
			},
		},
	];
}

function idArgument(args: Record<string, unknown>, what = 'the file id'): string {
	for (const key of Object.keys(args)) {
		if (key !== 'id') throw invalidField(key, `Unknown argument '${key}': give only 'id'`, 'unknown_field');
	}
	if (typeof args.id !== 'string' || args.id.length === 0) throw invalidField('id', `'id' is required: ${what}, a string`, 'missing_field');
	return args.id;
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
	if (!generation.result) return { ...generation };
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

/** Runs a tool; what it refuses becomes a tool result with the API's error body, never a protocol error. */
export async function callTool(
	tool: ToolDefinition,
	args: Record<string, unknown>,
	caller: ToolCaller,
	limits: { maxJsonBytes: number; maxUploadBytes: number },
	log: FastifyInstance['log'],
): Promise<ToolResult> {
	try {
		const answer = await tool.run(args, caller);
		return { content: [{ type: 'text', text: JSON.stringify(answer) }], structuredContent: answer };
	} catch (error) {
		const apiError = toApiError(error, limits);
		if (apiError.status >= 500 && apiError.status !== 507) log.error({ err: error, tool: tool.name }, 'MCP tool failed');
		const body = { error: { ...apiError.toBody().error, status: apiError.status } };
		return { content: [{ type: 'text', text: JSON.stringify(body) }], structuredContent: body, isError: true };
	}
}

function withoutBase64<Image extends { b64_json: unknown }>(image: Image): Omit<Image, 'b64_json'> {
	const marks: Partial<Image> = { ...image };
	delete marks.b64_json;
	return marks as Omit<Image, 'b64_json'>;
}
