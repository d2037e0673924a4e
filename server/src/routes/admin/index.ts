/** The admin API under /v1/admin: keys, usage and recent jobs. Exists only when the service has an --admin-key. */
import type { FastifyInstance } from 'fastify';
import { scope } from '../../http/scope';
import adminJobRoutes from './jobs';
import adminKeyRoutes from './keys';
import adminUsageRoutes from './usage';

export default async function adminRoutes(v1: FastifyInstance): Promise<void> {
	if (v1.config.adminKey === undefined) return;
	await v1.register(scope(adminApi), { prefix: '/admin' });
}

async function adminApi(admin: FastifyInstance): Promise<void> {
	for (const routes of [adminKeyRoutes, adminUsageRoutes, adminJobRoutes]) await admin.register(scope(routes));
}
