/**
 * GET /v1/usage: the calling key's images, seconds of video and cost per model and UTC day,
 * optionally between dates.
 */
import type { FastifyInstance } from 'fastify';
import { invalidField } from '../../../core/errors';
import { isRealDateTime } from '../http/calendar';
import { usageAnswer, usageResponseSchema } from '../usage/usage-response';
import { API_KEY_AUTH, AUTH_ERRORS, errorResponses, type ZodTypeProvider } from '../schema-docs/route-schemas';

const DATE = /^\d{4}-\d{2}-\d{2}$/;

function dateParameter(value: unknown, name: 'from' | 'to'): string | undefined {
	if (value === undefined) return undefined;
	if (typeof value !== 'string' || !DATE.test(value) || !isRealDateTime(value)) {
		throw invalidField(name, `'${name}' must be a date as YYYY-MM-DD; got ${JSON.stringify(value)}`);
	}
	return value;
}

const DATE_QUERY = { type: 'string', pattern: DATE.source, description: 'A UTC day as YYYY-MM-DD' };

/** The query documents only: the handler checks it, naming the parameter at fault. */
const schema = {
	tags: ['Usage'],
	operationId: 'usage',
	summary: "The key's images, seconds of video and cost per model and UTC day",
	...API_KEY_AUTH,
	querystring: { type: 'object', properties: { from: DATE_QUERY, to: DATE_QUERY }, additionalProperties: false },
	response: { 200: usageResponseSchema, ...errorResponses([400, 'A bad date'], ...AUTH_ERRORS) },
};

export default async function usageRoutes(scope: FastifyInstance): Promise<void> {
	const v1 = scope.withTypeProvider<ZodTypeProvider>();
	const ledger = v1.usageLedger;
	v1.get('/usage', { schema }, async (request) => {
		const query = request.query as Record<string, unknown>;
		for (const key of Object.keys(query)) {
			if (key !== 'from' && key !== 'to') throw invalidField(key, `Unknown query parameter '${key}': use from and to (YYYY-MM-DD)`, 'unknown_field');
		}
		const from = dateParameter(query.from, 'from');
		const to = dateParameter(query.to, 'to');
		if (from && to && from > to) throw invalidField('from', `'from' (${from}) is after 'to' (${to})`);
		return usageAnswer(await ledger.rows(request.apiKeyId, from, to), from, to);
	});
}
