/** GET /v1/usage: the calling key's images and cost per model and UTC day, optionally between dates. */
import type { FastifyInstance } from 'fastify';
import { invalidField } from '../../../core/errors';
import { roundUsd } from '../../../core/units';
import { isRealDateTime } from '../http/calendar';

const DATE = /^\d{4}-\d{2}-\d{2}$/;

function dateParameter(value: unknown, name: 'from' | 'to'): string | undefined {
	if (value === undefined) return undefined;
	if (typeof value !== 'string' || !DATE.test(value) || !isRealDateTime(value)) {
		throw invalidField(name, `'${name}' must be a date as YYYY-MM-DD; got ${JSON.stringify(value)}`);
	}
	return value;
}

export default async function usageRoutes(v1: FastifyInstance): Promise<void> {
	const ledger = v1.usageLedger;
	v1.get('/usage', async (request) => {
		const query = request.query as Record<string, unknown>;
		for (const key of Object.keys(query)) {
			if (key !== 'from' && key !== 'to') throw invalidField(key, `Unknown query parameter '${key}': use from and to (YYYY-MM-DD)`, 'unknown_field');
		}
		const from = dateParameter(query.from, 'from');
		const to = dateParameter(query.to, 'to');
		if (from && to && from > to) throw invalidField('from', `'from' (${from}) is after 'to' (${to})`);
		const data = await ledger.rows(request.apiKeyId, from, to);
		const total = data.reduce((sum, row) => ({ images: sum.images + row.images, cost_usd: sum.cost_usd + row.cost_usd }), { images: 0, cost_usd: 0 });
		return { object: 'usage', from: from ?? null, to: to ?? null, data, total: { images: total.images, cost_usd: roundUsd(total.cost_usd) } };
	});
}
