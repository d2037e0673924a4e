/**
 * /v1/admin/keys: issue, list, read, change, rotate and revoke managed keys. Registered only with
 * --admin-key; the /v1 guard lets only the admin key in.
 */
import type { FastifyInstance } from 'fastify';
import { ImageGenError } from '../../../../core/errors';
import { createKeySchema, keyIdSchema, parseAdmin, rotateKeySchema, updateKeySchema } from '../../keys/key-schemas';

const notFound = (id: string) => new ImageGenError(404, `No key '${id}': it never existed or was revoked`, { param: 'id', code: 'key_not_found' });

export default async function adminKeyRoutes(admin: FastifyInstance): Promise<void> {
	const keys = admin.keyAdmin;

	admin.post('/keys', async (request, reply) => {
		const created = await keys.create(parseAdmin(createKeySchema, request.body));
		return reply.status(201).send(created);
	});

	admin.get('/keys', async () => ({ object: 'list', data: await keys.list() }));

	admin.get<{ Params: { id: string } }>('/keys/:id', async (request) => {
		const id = parseAdmin(keyIdSchema, request.params.id, 'id');
		return (await keys.get(id)) ?? Promise.reject(notFound(id));
	});

	admin.patch<{ Params: { id: string } }>('/keys/:id', async (request) => {
		const id = parseAdmin(keyIdSchema, request.params.id, 'id');
		return (await keys.update(id, parseAdmin(updateKeySchema, request.body))) ?? Promise.reject(notFound(id));
	});

	admin.delete<{ Params: { id: string } }>('/keys/:id', async (request, reply) => {
		const id = parseAdmin(keyIdSchema, request.params.id, 'id');
		if (!(await keys.revoke(id))) throw notFound(id);
		return reply.status(204).send();
	});

	admin.post<{ Params: { id: string } }>('/keys/:id/rotate', async (request) => {
		const id = parseAdmin(keyIdSchema, request.params.id, 'id');
		const { grace_seconds: graceSeconds } = parseAdmin(rotateKeySchema, request.body);
		return (await keys.rotate(id, graceSeconds ?? 0)) ?? Promise.reject(notFound(id));
	});
}
