/**
 * Routes declare Fastify `schema`s in zod, beside their handlers: request parts and answers are
 * typed by `z.infer` (`ZodTypeProvider`), and @fastify/swagger draws the OpenAPI document from
 * the same schemas (`toDocumentedSchema`). What a schema does at run time is chosen so that no
 * answer changes:
 * - a zod schema validates, and its first problem becomes the same 400 naming the field that
 *   every zod-checked request gets (keys/key-schemas.ts);
 * - a plain JSON Schema only documents: the handler parses with core's own parser, whose checks
 *   (a model's fields, media inputs, the exact wording of each refusal) no JSON Schema can state;
 * - answers are never reshaped: they leave as JSON.stringify writes what the handler built.
 */
import type { FastifySchema, FastifySchemaCompiler, FastifyTypeProvider } from 'fastify';
import type { FastifySerializerCompiler } from 'fastify/types/schema';
import { z, type ZodTypeAny } from 'zod/v3';
import { parseAdmin } from '../keys/key-schemas';
import { toJsonSchema, type JsonSchema } from './json-schema';

export interface ZodTypeProvider extends FastifyTypeProvider {
	validator: this['schema'] extends ZodTypeAny ? z.output<this['schema']> : unknown;
	serializer: this['schema'] extends ZodTypeAny ? z.input<this['schema']> : unknown;
}

const isZod = (schema: unknown): schema is ZodTypeAny => schema instanceof z.ZodType;

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
	if (!isZod(schema)) return () => true;
	const fallbackParam = httpPart === 'querystring' ? 'query' : (httpPart ?? 'body');
	return (data) => {
		try {
			return { value: parseAdmin(schema, data, fallbackParam) };
		} catch (error) {
			return { error: error as Error };
		}
	};
};

export const serializerCompiler: FastifySerializerCompiler<unknown> = () => (data) => JSON.stringify(data);

const documented = (schema: unknown): unknown => (isZod(schema) ? toJsonSchema(schema) : schema);

/**
 * Named examples of a route's JSON body (OpenAPI Example Objects), written beside its schema as
 * `bodyExamples`. /docs fills "Try it out" with them; without them it makes a body up from the
 * schema, with every optional field filled, and that is no request the service takes (a webhook
 * URL it refuses, `size` beside `aspect_ratio`). test/server/schema-docs/request-examples.test.ts
 * sends each one.
 */
export type BodyExamples = Record<string, { summary: string; value: unknown }>;

/**
 * Where the examples wait on the operation until the document is whole: @fastify/swagger copies
 * an operation's `x-` keys as they are, but drops every word beside a `$ref` body (GenerationRequest).
 */
const BODY_EXAMPLES = 'x-body-examples';

/** @fastify/swagger's `transform`: every zod part of a route schema as JSON Schema, and its body's examples kept. */
export function toDocumentedSchema({ schema, url }: { schema: FastifySchema; url: string }): { schema: JsonSchema; url: string } {
	if (!schema) return { schema, url };
	const { response, bodyExamples, ...parts } = schema as JsonSchema;
	const converted: JsonSchema = Object.fromEntries(Object.entries(parts).map(([part, value]) => [part, documented(value)]));
	if (response) converted.response = Object.fromEntries(Object.entries(response as JsonSchema).map(([status, value]) => [status, documented(value)]));
	if (bodyExamples) converted[BODY_EXAMPLES] = bodyExamples;
	return { schema: converted, url };
}

type Operation = { requestBody?: { content: Record<string, JsonSchema> } } & Record<string, unknown>;

/** @fastify/swagger's `transformObject`: each operation's body examples moved onto its JSON body, where OpenAPI has them. */
export function withBodyExamples({ openapiObject }: { openapiObject: { paths?: Record<string, Record<string, Operation>> } }): unknown {
	for (const item of Object.values(openapiObject.paths ?? {})) {
		for (const operation of Object.values(item)) {
			const examples = operation[BODY_EXAMPLES];
			if (examples === undefined) continue;
			delete operation[BODY_EXAMPLES];
			const json = operation.requestBody?.content['application/json'];
			if (json) json.examples = examples;
		}
	}
	return openapiObject;
}

/** A small PNG (64 × 64, one colour) as a data URI: an input image the examples can send as they are. */
export const EXAMPLE_PNG_DATA_URI =
	'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAEAAAABACAIAAAAlC+aJAAAACXBIWXMAAAPoAAAD6AG1e1JrAAAAUElEQVR42u3PQQkAAAgEsItkRCMbwQi+hcEKLNP1WgQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQErsAC89ABh4I/3yIAAAAASUVORK5CYII=';

/** Operation security, by the scheme names of the document (schema-docs/openapi.ts). */
export const API_KEY_AUTH = { security: [{ apiKey: [] }] };
export const ADMIN_KEY_AUTH = { security: [{ adminKey: [] }] };

/** A response in the shared error shape (the `Error` component). */
const errorResponse = (description: string) => ({ description, $ref: 'Error#' });

/** Error responses by status, each with what it means on this route. */
export function errorResponses<Status extends number>(...list: Array<[Status, string]>): Record<Status, JsonSchema> {
	return Object.fromEntries(list.map(([status, description]) => [status, errorResponse(description)])) as unknown as Record<Status, JsonSchema>;
}

export const AUTH_ERRORS: Array<[number, string]> = [
	[401, 'Missing or wrong key'],
	[403, 'The key may not do this (an admin key on an API route or an API key on an admin route, a model the key is not allowed)'],
	[429, 'Rate limit of the key reached, or too many wrong keys from this client address; see Retry-After'],
];

/** A response with no body (204, 304). */
export const noBody = (description: string): JsonSchema => ({ description, type: 'null' });

export const IDEMPOTENCY_KEY_HEADER = {
	type: 'object',
	properties: { 'idempotency-key': { type: 'string', maxLength: 255, description: 'Run at most once: a repeat answers the first answer again' } },
};
