/**
 * /v1/admin/keys: issue, list, read, change, rotate and revoke managed keys. Registered only with
 * --admin-key; the /v1 guard lets only the admin key in. The schemas validate (zod, naming the
 * field at fault), the id before the body.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod/v3';
import { ImageGenError } from '../../../../core/errors';
import { keyObjectSchema } from '../../keys/key-admin';
import { createKeySchema, keyIdSchema, rotateKeySchema, updateKeySchema } from '../../keys/key-schemas';
import { ADMIN_KEY_AUTH, AUTH_ERRORS, errorResponses, noBody, type BodyExamples, type ZodTypeProvider } from '../../schema-docs/route-schemas';

const notFound = (id: string) => new ImageGenError(404, `No key '${id}': it never existed or was revoked`, { param: 'id', code: 'key_not_found' });

const params = z.object({ id: keyIdSchema.describe('Managed key id (key_…)') });
const withSecret = keyObjectSchema.extend({ key: z.string().describe('The secret; only in the answers of create and rotate') });
const operation = (operationId: string, summary: string) => ({ tags: ['Operators'], operationId, summary, ...ADMIN_KEY_AUTH });
const badField: [number, string] = [400, 'A field is wrong (param names it)'];
const missing: [number, string] = [404, 'No such key'];

export default async function adminKeyRoutes(scope: FastifyInstance): Promise<void> {
	const admin = scope.withTypeProvider<ZodTypeProvider>();
	const keys = admin.keyAdmin;

	const create = {
		...operation('createKey', 'Issue a managed key'),
		body: createKeySchema,
		bodyExamples: {
			limited: {
				summary: 'A key for one team: p-image only, 25 USD a month, 60 requests a minute',
				value: { name: 'Marketing team', models: ['p-image'], budget_usd: 25, budget_period: 'month', rate_limit_per_minute: 60 },
			},
			unlimited: { summary: 'A key with no limits', value: { name: 'Nightly batch' } },
		} satisfies BodyExamples,
		response: { 201: withSecret.describe('The key with its secret'), ...errorResponses(badField, ...AUTH_ERRORS) },
	};
	admin.post('/keys', { schema: create }, async (request, reply) => reply.status(201).send(await keys.create(request.body)));

	const list = { ...operation('listKeys', 'Every managed key'), response: { 200: z.object({ object: z.literal('list'), data: z.array(keyObjectSchema) }).describe('Keys'), ...errorResponses(...AUTH_ERRORS) } };
	admin.get('/keys', { schema: list }, async () => ({ object: 'list' as const, data: await keys.list() }));

	const read = { ...operation('getKey', 'One managed key'), params, response: { 200: keyObjectSchema, ...errorResponses(badField, ...AUTH_ERRORS, missing) } };
	admin.get('/keys/:id', { schema: read }, async (request) => (await keys.get(request.params.id)) ?? Promise.reject(notFound(request.params.id)));

	const update = {
		...operation('updateKey', 'Change a key (null clears a limit)'),
		params,
		body: updateKeySchema,
		bodyExamples: {
			budget: { summary: 'A larger monthly budget, and every model', value: { budget_usd: 50, budget_period: 'month', models: null } },
			block: { summary: 'Block the key (false lets it in again)', value: { blocked: true } },
		} satisfies BodyExamples,
		response: { 200: keyObjectSchema, ...errorResponses(badField, ...AUTH_ERRORS, missing) },
	};
	admin.patch('/keys/:id', { schema: update }, async (request) => (await keys.update(request.params.id, request.body)) ?? Promise.reject(notFound(request.params.id)));

	const revoke = { ...operation('revokeKey', 'Revoke a key'), params, response: { 204: noBody('Revoked'), ...errorResponses(badField, ...AUTH_ERRORS, missing) } };
	admin.delete('/keys/:id', { schema: revoke }, async (request, reply) => {
		if (!(await keys.revoke(request.params.id))) throw notFound(request.params.id);
		return reply.status(204).send();
	});

	const rotate = {
		...operation('rotateKey', 'A new secret; the old one works for grace_seconds more'),
		params,
		body: rotateKeySchema,
		bodyExamples: {
			grace: { summary: 'The old secret keeps working for an hour', value: { grace_seconds: 3600 } },
			now: { summary: 'The old secret stops at once', value: {} },
		} satisfies BodyExamples,
		response: { 200: withSecret.describe('The key with its new secret'), ...errorResponses(badField, ...AUTH_ERRORS, missing) },
	};
	admin.post('/keys/:id/rotate', { schema: rotate }, async (request) => (await keys.rotate(request.params.id, request.body.grace_seconds ?? 0)) ?? Promise.reject(notFound(request.params.id)));
}
