/**
 * GET /v1/models: the catalog in force (generation/catalog-in-force.ts) and the aliases
 * (generation/model-aliases.ts); a key limited to some models sees only those and their aliases.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod/v3';
import { MODEL_IDS } from '../../../core/models';
import { catalogFor, catalogInForce } from '../generation/catalog-in-force';
import { withAliases } from '../generation/model-aliases';
import { API_KEY_AUTH, AUTH_ERRORS, errorResponses, type ZodTypeProvider } from '../schema-docs/route-schemas';

const names = z.array(z.string());
const modelSchema = z.object({
	id: z.string().describe('A model, or an alias of one (--model-aliases)'),
	alias_of: z.enum(MODEL_IDS).optional().describe("An alias's model: the one that draws its images"),
	object: z.literal('model'),
	display_name: z.string(),
	description: z.string(),
	fields: names,
	ignored_fields: names.describe("OpenAI's fields the model accepts and ignores"),
	required: names,
	aspect_ratios: names,
	output_formats: names,
	response_formats: names,
	style_types: names.optional(),
	magic_prompt_options: names.optional(),
	limits: z.record(z.number().int()),
	defaults: z.record(z.string()),
	pricing: z.object({ per_image_usd: z.number() }),
	providers: names.describe('The hosts that serve the model, in the order a fallback chain tries them'),
});

const videoModelSchema = z.object({
	id: z.string(),
	object: z.literal('model'),
	type: z.literal('video').describe('A video model: POST /v1/videos'),
	display_name: z.string(),
	description: z.string(),
	fields: names,
	required: names,
	aspect_ratios: names,
	resolutions: names,
	fps: z.array(z.number().int()),
	limits: z.record(z.number().int()),
	defaults: z.record(z.union([z.string(), z.number(), z.boolean()])),
	pricing: z.object({ per_second_usd: z.record(z.number()), draft_per_second_usd: z.record(z.number()) }).describe('USD per second of video, by resolution'),
	providers: names,
});

const schema = {
	tags: ['Images'],
	operationId: 'listModels',
	summary: 'The models this key may use, with their fields, limits, prices and hosts',
	...API_KEY_AUTH,
	response: { 200: z.object({ object: z.literal('list'), data: z.array(z.union([modelSchema, videoModelSchema])) }).describe('The catalog'), ...errorResponses(...AUTH_ERRORS) },
};

export default async function modelRoutes(scope: FastifyInstance): Promise<void> {
	const v1 = scope.withTypeProvider<ZodTypeProvider>();
	const catalog = withAliases(catalogInForce(v1.config.priceOverrides, v1.providers, v1.videoProviders), v1.config.modelAliases);
	v1.get('/models', { schema }, async (request) => catalogFor(catalog, request.apiKey?.models));
}
