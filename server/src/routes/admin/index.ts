/** The admin API under /v1/admin: keys, usage and recent jobs. Exists only when the service has an --admin-key. */
import type { FastifyInstance } from 'fastify';
import adminJobRoutes from './jobs';
import adminKeyRoutes from './keys';
import adminUsageRoutes from './usage';

export default async function adminRoutes(v1: FastifyInstance): Promise<void> {
	if (v1.config.adminKey === undefined) return;
	await v1.register(
		async (admin) => {
			await admin.register(adminKeyRoutes);
			await admin.register(adminUsageRoutes);
			await admin.register(adminJobRoutes);
		},
		{ prefix: '/admin' },
	);
}
