/**
 * GET /v1/admin/usage?from&to&key_id: images and cost per UTC day, key and model, over every key
 * (managed ones, revoked included, and the flat --api-keys) or one.
 */
import type { FastifyInstance } from 'fastify';
import { apiKeyIdOf } from '../../keys/authenticate';
import { usageQuerySchema } from '../../keys/key-schemas';
import { ADMIN_KEY_AUTH, AUTH_ERRORS, errorResponses, type ZodTypeProvider } from '../../schema-docs/route-schemas';
import { usageAnswer, usageResponseSchema } from '../../usage/usage-response';

const schema = {
	tags: ['Operators'],
	operationId: 'adminUsage',
	summary: 'Images and cost per day, key and model over every key',
	...ADMIN_KEY_AUTH,
	querystring: usageQuerySchema,
	response: { 200: usageResponseSchema, ...errorResponses([400, 'A bad query'], ...AUTH_ERRORS) },
};

export default async function adminUsageRoutes(scope: FastifyInstance): Promise<void> {
	const admin = scope.withTypeProvider<ZodTypeProvider>();
	const ledger = admin.usageLedger;
	const flatKeyIds = admin.config.apiKeys.map(apiKeyIdOf);

	admin.get('/usage', { schema }, async (request) => {
		const { from, to, key_id: keyId } = request.query;
		const keyIds = keyId !== undefined ? [keyId] : [...new Set([...(await admin.keyStore.list({ includeRevoked: true })).map((key) => key.id), ...flatKeyIds])];
		const perKey = await Promise.all(keyIds.map(async (id) => (await ledger.rows(id, from, to)).map((row) => ({ date: row.date, key_id: id, model: row.model, images: row.images, seconds: row.seconds, cost_usd: row.cost_usd }))));
		const data = perKey.flat().sort((a, b) => a.date.localeCompare(b.date) || a.key_id.localeCompare(b.key_id) || a.model.localeCompare(b.model));
		return usageAnswer(data, from, to);
	});
}
