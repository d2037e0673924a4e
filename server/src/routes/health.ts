/**
 * GET /healthz. 200 `{status:'ok'}` when ready. When the usage ledger cannot write, the answer is
 * still 200 but `{status:'degraded', ledger:{…}}`: the replica keeps serving (files, generations;
 * usage lines are queued, not lost), so a load balancer should keep it, while monitoring alerts on
 * the body. While shutting down Fastify answers 503 for it like for everything else.
 */
import type { FastifyInstance } from 'fastify';

export default async function healthRoutes(app: FastifyInstance): Promise<void> {
	app.get('/healthz', async () => {
		const ledger = app.usageLedger.health();
		return ledger.status === 'ok' ? { status: 'ok' } : { status: 'degraded', ledger };
	});
}
