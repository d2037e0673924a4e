/**
 * The OpenAPI 3.1 document of the service (GET /v1/openapi.json). Request bodies and queries come
 * from the zod schemas and catalog that validate them (schema-docs/json-schema.ts), so a changed
 * limit, enum or model shows here without a second edit; responses describe the answers' shapes.
 */
import { ERROR_TYPES } from '../../../core/errors';
import { MODEL_IDS } from '../../../core/models';
import { createKeySchema, rotateKeySchema, updateKeySchema, usageQuerySchema } from '../keys/key-schemas';
import { generationJsonSchema, toJsonSchema, uploadOptionsJsonSchema, type JsonSchema } from './json-schema';

export interface OpenApiOptions {
	retentionSeconds: number;
	/** Where the document says the service runs; relative to the document when absent. */
	serverUrl?: string;
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: JsonSchema) => ({ 'application/json': { schema } });
const ok = (description: string, schema: JsonSchema) => ({ description, content: json(schema) });
const errorResponse = (status: number, description: string) => [String(status), { description, content: json(ref('Error')) }] as const;
const errors = (...list: Array<[number, string]>) => Object.fromEntries(list.map(([status, text]) => errorResponse(status, text)));
const AUTH_ERRORS: Array<[number, string]> = [
	[401, 'Missing or wrong API key'],
	[403, 'The key may not do this (an admin key on an API route, a model the key is not allowed)'],
	[429, 'Rate limit of the key reached, or too many wrong keys from this client address; see Retry-After'],
];
const ID_PARAM = { name: 'id', in: 'path', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9_-]{16,64}$' }, description: 'File id (the last part of its URL, without extension)' };
const KEY_ID_PARAM = { name: 'id', in: 'path', required: true, schema: { type: 'string' }, description: 'Managed key id (key_…)' };
const HOSTED = { type: 'string', format: 'uri' };
const INSTANT = { type: 'string', format: 'date-time' };

/** Query schemas as OpenAPI parameters, one per property. */
function queryParameters(schema: JsonSchema): JsonSchema[] {
	const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
	const required = (schema.required ?? []) as string[];
	return Object.entries(properties).map(([name, property]) => ({ name, in: 'query', required: required.includes(name), schema: property }));
}

/** A page served from the package (routes/static-site.ts) and its assets. */
function staticSitePaths(path: string, operationId: string, summary: string, assetSummary: string, ...missing: Array<[number, string]>): JsonSchema {
	return {
		[path]: { get: { operationId, summary, responses: { '200': { description: 'HTML', content: { 'text/html': {} } }, '304': { description: 'Not modified (ETag)' }, ...errors(...missing) } } },
		[`${path}/assets/{name}`]: {
			get: {
				operationId: `${operationId}Asset`,
				summary: assetSummary,
				parameters: [{ name: 'name', in: 'path', required: true, schema: { type: 'string' } }],
				responses: { '200': { description: 'The asset', content: { 'text/javascript': {}, 'text/css': {} } }, '304': { description: 'Not modified (ETag)' }, ...errors(...missing, [404, 'Unknown asset']) },
			},
		},
	};
}

/** Groups of operations, in reading order; a path belongs to the first group whose test it passes. */
const TAGS: Array<{ name: string; description: string; test: (path: string) => boolean }> = [
	{ name: 'Images', description: 'Generate images and see which models this key may use', test: (path) => path === '/v1/images/generations' || path === '/v1/models' },
	{ name: 'Files', description: 'Host images and videos for a limited time; read, inspect and delete them', test: (path) => path === '/v1/uploads' || path.startsWith('/v1/files') || path.startsWith('/files') },
	{ name: 'Usage', description: "The key's own images and cost", test: (path) => path === '/v1/usage' },
	{ name: 'Agents', description: 'The Model Context Protocol endpoint and this document', test: (path) => path === '/mcp' || path === '/v1/openapi.json' || path.startsWith('/docs') },
	{ name: 'Operators', description: 'Managed keys, spend, metrics, health and the operator page (admin key)', test: () => true },
];

function tagged(paths: Record<string, Record<string, JsonSchema>>): JsonSchema {
	return Object.fromEntries(
		Object.entries(paths).map(([path, item]) => {
			const tag = TAGS.find(({ test }) => test(path))!.name;
			return [path, Object.fromEntries(Object.entries(item).map(([method, operation]) => [method, { tags: [tag], ...operation }]))];
		}),
	);
}

const DATE_QUERY = { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: 'A UTC day as YYYY-MM-DD' };

export function buildOpenApiDocument(options: OpenApiOptions): JsonSchema {
	const generationSchemas = Object.fromEntries(MODEL_IDS.map((id) => [`GenerationRequest_${id}`, generationJsonSchema(id)]));
	const uploadOptions = uploadOptionsJsonSchema(options.retentionSeconds);
	const mediaInput = { type: 'string', minLength: 1, description: 'An http(s) URL, a data URI or raw base64' };
	const usageSchema = {
		type: 'object',
		required: ['object', 'from', 'to', 'data', 'total'],
		properties: {
			object: { const: 'usage' },
			from: { type: ['string', 'null'] },
			to: { type: ['string', 'null'] },
			data: { type: 'array', items: { type: 'object', properties: { date: { type: 'string' }, key_id: { type: 'string' }, model: { type: 'string' }, images: { type: 'integer' }, cost_usd: { type: 'number' } }, required: ['date', 'model', 'images', 'cost_usd'] } },
			total: { type: 'object', properties: { images: { type: 'integer' }, cost_usd: { type: 'number' } }, required: ['images', 'cost_usd'] },
		},
	};
	const secured = { security: [{ bearerAuth: [] }] };

	return {
		openapi: '3.1.0',
		info: {
			title: 'ImageGen API',
			version: '1.0.0',
			description:
				'Image generation (p-image, p-image-edit, textimage-v2) and temporary hosting of images and videos. Every /v1 route takes `Authorization: Bearer <API key>`; the admin routes take the admin key. Errors share one shape whose `param` names the field at fault.',
		},
		...(options.serverUrl ? { servers: [{ url: options.serverUrl }] } : {}),
		components: {
			securitySchemes: {
				bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key; on /v1/admin/* the admin key' },
			},
			schemas: {
				Error: {
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
				...generationSchemas,
				GenerationRequest: {
					oneOf: MODEL_IDS.map((id) => ref(`GenerationRequest_${id}`)),
					discriminator: { propertyName: 'model', mapping: Object.fromEntries(MODEL_IDS.map((id) => [id, `#/components/schemas/GenerationRequest_${id}`])) },
				},
				GenerationResponse: {
					type: 'object',
					required: ['created', 'model', 'output_format', 'data', 'usage'],
					properties: {
						created: { type: 'integer', description: 'Unix seconds' },
						model: { type: 'string', enum: [...MODEL_IDS] },
						output_format: { type: 'string' },
						data: {
							type: 'array',
							items: {
								oneOf: [
									{ type: 'object', required: ['url', 'expires_at', 'seed'], properties: { url: HOSTED, expires_at: INSTANT, seed: { type: 'integer' }, provenance: ref('Provenance') } },
									{
										type: 'object',
										required: ['b64_json', 'seed'],
										properties: { b64_json: { type: 'string', contentEncoding: 'base64' }, seed: { type: 'integer' }, provenance: ref('Provenance') },
									},
								],
							},
						},
						usage: { type: 'object', required: ['images', 'cost_usd'], properties: { images: { type: 'integer' }, cost_usd: { type: 'number' } } },
					},
				},
				UploadJsonRequest: {
					type: 'object',
					description: "Exactly one of 'file' (the bytes decide image or video), 'image' or 'video'.",
					properties: { file: mediaInput, image: mediaInput, video: mediaInput, ...uploadOptions },
					additionalProperties: false,
				},
				UploadMultipartRequest: {
					type: 'object',
					required: ['file'],
					properties: { file: { type: 'string', contentMediaType: 'application/octet-stream' }, ...uploadOptions },
				},
				UploadResponse: {
					type: 'object',
					required: ['expiresAt'],
					properties: {
						imageUrl: HOSTED,
						videoUrl: HOSTED,
						expiresAt: INSTANT,
						id: { type: 'string' },
						mimeType: { type: 'string' },
						sizeBytes: { type: 'integer' },
						provenance: ref('Provenance'),
					},
				},
				FileInfo: {
					type: 'object',
					required: ['id', 'url', 'mimeType', 'sizeBytes', 'createdAt', 'expiresAt', 'provenance'],
					properties: {
						id: { type: 'string' },
						url: HOSTED,
						mimeType: { type: 'string' },
						sizeBytes: { type: 'integer' },
						createdAt: INSTANT,
						expiresAt: INSTANT,
						provenance: ref('Provenance'),
					},
				},
				Provenance: {
					type: 'object',
					description: "The file's marks: signed (our C2PA manifest), kept (an upload's own manifest that validates, hosted unchanged) or none; an upload's digital_source_type comes only from a manifest that validates",
					required: ['c2pa', 'digital_source_type'],
					properties: { c2pa: { type: 'string', enum: ['signed', 'kept', 'none'] }, digital_source_type: { type: ['string', 'null'], format: 'uri' } },
				},
				ModelList: {
					type: 'object',
					required: ['object', 'data'],
					properties: {
						object: { const: 'list' },
						data: {
							type: 'array',
							items: {
								type: 'object',
								required: ['id', 'fields', 'required', 'aspect_ratios', 'output_formats', 'limits', 'pricing'],
								properties: {
									id: { type: 'string', enum: [...MODEL_IDS] },
									object: { const: 'model' },
									display_name: { type: 'string' },
									description: { type: 'string' },
									fields: { type: 'array', items: { type: 'string' } },
									required: { type: 'array', items: { type: 'string' } },
									aspect_ratios: { type: 'array', items: { type: 'string' } },
									output_formats: { type: 'array', items: { type: 'string' } },
									response_formats: { type: 'array', items: { type: 'string' } },
									limits: { type: 'object', additionalProperties: { type: 'integer' } },
									defaults: { type: 'object', additionalProperties: { type: 'string' } },
									pricing: { type: 'object', properties: { per_image_usd: { type: 'number' } } },
								},
							},
						},
					},
				},
				Usage: usageSchema,
				CreateKeyRequest: toJsonSchema(createKeySchema),
				UpdateKeyRequest: toJsonSchema(updateKeySchema),
				RotateKeyRequest: toJsonSchema(rotateKeySchema),
				Key: {
					type: 'object',
					required: ['object', 'id', 'name', 'prefix', 'created_at', 'blocked'],
					properties: {
						object: { const: 'api_key' },
						id: { type: 'string' },
						name: { type: 'string' },
						prefix: { type: 'string' },
						created_at: INSTANT,
						expires_at: { type: ['string', 'null'], format: 'date-time' },
						blocked: { type: 'boolean' },
						models: { type: ['array', 'null'], items: { type: 'string', enum: [...MODEL_IDS] } },
						rate_limit_per_minute: { type: ['integer', 'null'] },
						budget: {
							type: ['object', 'null'],
							properties: { limit_usd: { type: 'number' }, period: { type: 'string' }, spent_usd: { type: 'number' }, resets_at: { type: ['string', 'null'] } },
						},
						key: { type: 'string', description: 'The secret; only in the answers of create and rotate' },
					},
				},
			},
		},
		tags: TAGS.map(({ name, description }) => ({ name, description })),
		paths: tagged({
			'/healthz': {
				get: {
					operationId: 'health',
					summary: 'Readiness: ok, or degraded while the usage ledger cannot write',
					responses: { '200': ok('Ready', { type: 'object', required: ['status'], properties: { status: { type: 'string', enum: ['ok', 'degraded'] } } }), ...errors([503, 'Shutting down']) },
				},
			},
			'/files/{name}': {
				get: {
					operationId: 'downloadFile',
					summary: 'A hosted file (public, no auth); supports Range, ETag and If-None-Match',
					parameters: [{ name: 'name', in: 'path', required: true, schema: { type: 'string' }, description: 'id.ext as in the URL' }],
					responses: {
						'200': { description: 'The bytes', content: { 'image/*': {}, 'video/*': {} } },
						'206': { description: 'A byte range' },
						'302': { description: 'Redirect to object storage (S3 with presigned downloads)' },
						'304': { description: 'Not modified' },
						...errors([404, 'Unknown, expired or deleted'], [416, 'Range not satisfiable']),
					},
				},
			},
			'/metrics': {
				get: {
					operationId: 'metrics',
					summary: 'Prometheus metrics of this replica (admin key; only with --admin-key)',
					...secured,
					responses: { '200': { description: 'Prometheus text format', content: { 'text/plain': { schema: { type: 'string' } } } }, ...errors(...AUTH_ERRORS, [404, 'No --admin-key configured']) },
				},
			},
			...staticSitePaths('/admin', 'adminPage', 'The operator web page (signs in with the admin key in the browser)', 'A script, style sheet or chart library of the operator page', [404, 'No --admin-key configured']),
			...staticSitePaths('/docs', 'docsPage', 'This reference as a web page, drawn from this document', 'A script or style sheet of the reference page'),
			'/v1/openapi.json': {
				get: { operationId: 'openapi', summary: 'This document (public, no auth)', responses: { '200': ok('OpenAPI 3.1', { type: 'object' }) } },
			},
			'/v1/models': {
				get: { operationId: 'listModels', summary: 'The models this key may use', ...secured, responses: { '200': ok('The catalog', ref('ModelList')), ...errors(...AUTH_ERRORS) } },
			},
			'/v1/images/generations': {
				post: {
					operationId: 'generateImage',
					summary: 'Generate an image; the fields accepted depend on the model',
					...secured,
					parameters: [{ name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', maxLength: 255 } }],
					requestBody: { required: true, content: json(ref('GenerationRequest')) },
					responses: {
						'200': ok('The image', ref('GenerationResponse')),
						...errors([400, 'A field is wrong (param names it)'], ...AUTH_ERRORS, [402, 'The key\'s budget is spent'], [409, 'Idempotency-Key reused with another body, or still running'], [413, 'Body too large'], [502, 'The provider failed'], [503, 'No provider available; see Retry-After'], [504, 'The provider took too long']),
					},
				},
			},
			'/v1/uploads': {
				post: {
					operationId: 'uploadFile',
					summary: 'Host an image or video for a limited time, optionally converted or fitted',
					...secured,
					parameters: [{ name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', maxLength: 255 } }],
					requestBody: { required: true, content: { ...json(ref('UploadJsonRequest')), 'multipart/form-data': { schema: ref('UploadMultipartRequest') } } },
					responses: {
						'200': ok('Hosted', ref('UploadResponse')),
						...errors([400, 'A field is wrong (param names it)'], ...AUTH_ERRORS, [409, 'Idempotency-Key conflict'], [413, 'Larger than the upload limit'], [415, 'Not a supported image or video'], [507, 'Storage full']),
					},
				},
			},
			'/v1/files/{id}': {
				get: { operationId: 'getFile', summary: 'What a file of this key is', ...secured, parameters: [ID_PARAM], responses: { '200': ok('The file', ref('FileInfo')), ...errors(...AUTH_ERRORS, [404, 'No such file of this key']) } },
				delete: { operationId: 'deleteFile', summary: 'Take a file of this key offline now', ...secured, parameters: [ID_PARAM], responses: { '204': { description: 'Deleted' }, ...errors(...AUTH_ERRORS, [404, 'No such file of this key']) } },
			},
			'/v1/usage': {
				get: {
					operationId: 'usage',
					summary: "The key's images and cost per model and UTC day",
					...secured,
					parameters: [{ name: 'from', in: 'query', required: false, schema: DATE_QUERY }, { name: 'to', in: 'query', required: false, schema: DATE_QUERY }],
					responses: { '200': ok('Usage', ref('Usage')), ...errors([400, 'A bad date'], ...AUTH_ERRORS) },
				},
			},
			'/v1/admin/keys': {
				post: { operationId: 'createKey', summary: 'Issue a managed key (admin key; only with --admin-key)', ...secured, requestBody: { required: true, content: json(ref('CreateKeyRequest')) }, responses: { '201': ok('The key with its secret', ref('Key')), ...errors([400, 'A field is wrong'], ...AUTH_ERRORS) } },
				get: { operationId: 'listKeys', summary: 'Every managed key', ...secured, responses: { '200': ok('Keys', { type: 'object', properties: { object: { const: 'list' }, data: { type: 'array', items: ref('Key') } } }), ...errors(...AUTH_ERRORS) } },
			},
			'/v1/admin/keys/{id}': {
				get: { operationId: 'getKey', summary: 'One managed key', ...secured, parameters: [KEY_ID_PARAM], responses: { '200': ok('The key', ref('Key')), ...errors(...AUTH_ERRORS, [404, 'No such key']) } },
				patch: { operationId: 'updateKey', summary: 'Change a key (null clears a limit)', ...secured, parameters: [KEY_ID_PARAM], requestBody: { required: true, content: json(ref('UpdateKeyRequest')) }, responses: { '200': ok('The key', ref('Key')), ...errors([400, 'A field is wrong'], ...AUTH_ERRORS, [404, 'No such key']) } },
				delete: { operationId: 'revokeKey', summary: 'Revoke a key', ...secured, parameters: [KEY_ID_PARAM], responses: { '204': { description: 'Revoked' }, ...errors(...AUTH_ERRORS, [404, 'No such key']) } },
			},
			'/v1/admin/keys/{id}/rotate': {
				post: { operationId: 'rotateKey', summary: 'A new secret; the old one works for grace_seconds more', ...secured, parameters: [KEY_ID_PARAM], requestBody: { required: false, content: json(ref('RotateKeyRequest')) }, responses: { '200': ok('The key with its new secret', ref('Key')), ...errors([400, 'A field is wrong'], ...AUTH_ERRORS, [404, 'No such key']) } },
			},
			'/v1/admin/usage': {
				get: { operationId: 'adminUsage', summary: 'Images and cost per day, key and model over every key', ...secured, parameters: queryParameters(toJsonSchema(usageQuerySchema)), responses: { '200': ok('Usage', ref('Usage')), ...errors([400, 'A bad query'], ...AUTH_ERRORS) } },
			},
			'/mcp': {
				post: {
					operationId: 'mcp',
					summary: 'Model Context Protocol, Streamable HTTP, stateless: tools generate_image, upload_file, get_file, delete_file, list_models',
					...secured,
					requestBody: { required: true, content: json({ type: 'object', description: 'One JSON-RPC 2.0 message (a batch is refused)' }) },
					responses: {
						'200': ok('The JSON-RPC answer', { type: 'object' }),
						'202': { description: 'A notification was accepted' },
						'400': ok('A JSON-RPC batch (an array): refused whole, before any call runs, with JSON-RPC error -32600', { type: 'object' }),
						...errors(...AUTH_ERRORS, [406, 'Accept must list application/json and text/event-stream']),
					},
				},
				get: { operationId: 'mcpStream', summary: 'Not offered (stateless)', ...secured, responses: errors(...AUTH_ERRORS, [405, 'Send every message with POST']) },
				delete: { operationId: 'mcpSession', summary: 'Not offered (no sessions)', ...secured, responses: errors(...AUTH_ERRORS, [405, 'Send every message with POST']) },
			},
		}),
	};
}
