/**
 * GET /v1/admin/usage?from&to&key_id: images and cost per UTC day, key and model, over every key
 * (managed ones, revoked included, and the flat --api-keys) or one.
 */
import type { FastifyInstance } from 'fastify';
import { roundUsd } from '../../../../core/units';
import { apiKeyIdOf } from '../../keys/authenticate';
import { parseAdmin, usageQuerySchema } from '../../keys/key-schemas';

export default async function adminUsageRoutes(admin: FastifyInstance): Promise<void> {
	const ledger = admin.usageLedger;
	const flatKeyIds = admin.config.apiKeys.map(apiKeyIdOf);

	admin.get('/usage', async (request) => {
		const { from, to, key_id: keyId } = parseAdmin(usageQuerySchema, request.query, 'query');
		const keyIds = keyId !== undefined ? [keyId] : [...new Set([...(await admin.keyStore.list({ includeRevoked: true })).map((key) => key.id), ...flatKeyIds])];
		const perKey = await Promise.all(keyIds.map(async (id) => (await ledger.rows(id, from, to)).map((row) => ({ date: row.date, key_id: id, model: row.model, images: row.images, cost_usd: row.cost_usd }))));
		const data = perKey.flat().sort((a, b) => a.date.localeCompare(b.date) || a.key_id.localeCompare(b.key_id) || a.model.localeCompare(b.model));
		const total = data.reduce((sum, row) => ({ images: sum.images + row.images, cost_usd: sum.cost_usd + row.cost_usd }), { images: 0, cost_usd: 0 });
		return { object: 'usage', from: from ?? null, to: to ?? null, data, total: { images: total.images, cost_usd: roundUsd(total.cost_usd) } };
	});
}
