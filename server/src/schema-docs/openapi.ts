/**
 * The OpenAPI 3.1 document's frame (GET /v1/openapi.json): @fastify/swagger fills its paths from
 * the routes' own schemas (route-schemas.ts, which also puts each body's examples in place); this
 * file adds what belongs to no single route: the title and version, the security schemes, the
 * groups, and the shared schemas the routes refer to (the error shape, one generation body per model).
 */
import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import { ERROR_TYPES } from '../../../core/errors';
import { MODEL_IDS } from '../../../core/models';
import { generationJsonSchema, type JsonSchema } from './json-schema';
import { toDocumentedSchema, withBodyExamples } from './route-schemas';

/** Groups of operations, in reading order; each route names its own. */
const TAGS = [
	{ name: 'Images', description: 'Generate images and see which models this key may use' },
	{ name: 'Videos', description: "Make videos with p-video as OpenAI's videos API does: create, follow, download, cancel, delete" },
	{ name: 'Files', description: 'Host images and videos for a limited time; read, inspect and delete them' },
	{ name: 'Usage', description: "The key's own images and cost" },
	{ name: 'Agents', description: 'The Model Context Protocol endpoint and this document' },
	{ name: 'Operators', description: 'Managed keys, spend, metrics, health and the operator page' },
];

/** Schemas the routes refer to by `$ref` ('Error#'), listed once under components. */
export function sharedSchemas(): JsonSchema[] {
	return [
		{
			$id: 'Error',
			type: 'object',
			required: ['error'],
			properties: {
				error: {
					type: 'object',
					required: ['message', 'type', 'param', 'code'],
					properties: {
						message: { type: 'string' },
						type: { type: 'string', enum: [...new Set(Object.values(ERROR_TYPES))] },
						param: { type: ['string', 'null'], description: 'The request field at fault, when one is' },
						code: { type: ['string', 'null'] },
					},
				},
			},
		},
		...MODEL_IDS.map((id) => ({ $id: `GenerationRequest_${id}`, ...generationJsonSchema(id) })),
		{ $id: 'GenerationRequest', description: 'The fields accepted depend on the model', oneOf: MODEL_IDS.map((id) => ({ $ref: `GenerationRequest_${id}#` })) },
	];
}

export function openApiOptions(version: string): FastifyDynamicSwaggerOptions {
	return {
		openapi: {
			openapi: '3.1.0',
			info: {
				title: 'ImageGen API',
				version,
				description:
					'Image generation (p-image, p-image-edit, textimage-v2) and temporary hosting of images and videos. The /v1 routes and /mcp take `Authorization: Bearer <API key>`; the admin routes and /metrics take the admin key the same way. Errors share one shape whose `param` names the field at fault.',
			},
			components: {
				securitySchemes: {
					apiKey: { type: 'http', scheme: 'bearer', description: 'An API key (--api-keys, or a managed key)' },
					adminKey: { type: 'http', scheme: 'bearer', description: 'The admin key (--admin-key)' },
				},
			},
			tags: TAGS,
		},
		// Shared schemas keep their own names under components (the default numbers them).
		refResolver: { buildLocalReference: (json, _baseUri, _fragment, index) => String(json.$id ?? `def-${index}`) },
		transform: toDocumentedSchema as FastifyDynamicSwaggerOptions['transform'],
		transformObject: withBodyExamples as FastifyDynamicSwaggerOptions['transformObject'],
	};
}
