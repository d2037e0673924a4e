/**
 * The MCP tools: each calls the service code the REST routes call (the shared generation runner,
 * uploads, a key's own files, the catalog, the provenance check) as the calling API key, and answers a compact JSON
 * object both as `structuredContent` and as text. Images are always hosted and answered by URL,
 * never as base64. A refused call is a tool result with `isError: true` carrying the API's error
 * body, whose `param` names the field, so a model can correct its arguments.
 */
import type { FastifyInstance } from 'fastify';
import { isModelId } from '../../../core/models';
import type { ApiKeyPolicy } from '../keys/authenticate';
import { toApiError } from '../http/error-handler';
import { catalogFor, catalogInForce } from '../generation/catalog-in-force';
import { deleteFileTool, getFileTool, uploadFileTool } from './file-tools';
import { cancelGenerationTool, generateImageTool, getGenerationTool } from './generation-tools';
import { generateVideoTool } from './video-tools';
import { verifyImageTool } from './verify-tools';
import { isVideoModelId, type CatalogModelId } from '../../../core/video-models';
import type { ToolCaller, ToolDefinition } from './tool-definition';
import { EMPTY_INPUT_SCHEMA } from './tool-schemas';

export type { ToolCaller } from './tool-definition';

interface ToolResult {
	[key: string]: unknown;
	content: { type: 'text'; text: string }[];
	structuredContent?: Record<string, unknown>;
	isError?: boolean;
}

/** The tools as the calling key sees them: a key limited to some models is offered only those. */
export function toolsFor(service: FastifyInstance, apiKey: ApiKeyPolicy): ToolDefinition[] {
	const catalog = catalogInForce(service.config.priceOverrides, service.providers, service.videoProviders);
	const models = (apiKey.models ?? catalog.data.map((model) => model.id)) as CatalogModelId[];
	const videoModels = models.filter(isVideoModelId);
	return [
		generateImageTool(service, models.filter(isModelId)),
		...(videoModels.length > 0 ? [generateVideoTool(service, videoModels)] : []),
		uploadFileTool(service),
		getFileTool(service),
		deleteFileTool(service),
		getGenerationTool(service),
		cancelGenerationTool(service),
		verifyImageTool(service),
		{
			name: 'list_models',
			title: 'List the models',
			description: 'The models this API key may use, with the fields, aspect ratios, formats, limits and price of each (per image, or per second of video).',
			inputSchema: EMPTY_INPUT_SCHEMA,
			annotations: { readOnlyHint: true, openWorldHint: false },
			async run() {
				return catalogFor(catalog, models);
			},
		},
	];
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
