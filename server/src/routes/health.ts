/**
 * GET /healthz (no auth): status and counts only; why an engine failed goes to the log, never into
 * this public answer (it would show internal addresses and paths).
 *
 * - 200 `{status:'ok'}` when ready.
 * - 503 `{status:'degraded', engines:{…}}` while PostgreSQL or the bucket cannot be reached: every
 *   route that needs them answers 503 then, so a load balancer must notice and stop sending here
 *   (or, when every replica shares the outage, its own error page tells clients the same).
 * - 503 `{status:'degraded', engines:{database:'damaged'}}` once the embedded database was found
 *   damaged (by a request or the periodic quick check): it needs a restore, not a retry.
 * - 200 `{status:'degraded', engines:{database:'full'}, …}` while the embedded database has no room:
 *   every write answers 507, but hosted files still download, so a load balancer should keep it.
 * - 200 `{status:'degraded', ledger:{status, pending}}` when only the usage ledger cannot write:
 *   the replica still serves files and generations (usage lines are queued, not lost), so a load
 *   balancer should keep it while monitoring alerts on the body.
 *
 * Probes are shared for a second, so a flood of health checks is one query and one HEAD request.
 * While shutting down Fastify answers 503 for it like for everything else.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod/v3';
import type { ZodTypeProvider } from '../schema-docs/route-schemas';

const PROBE_TIMEOUT_MS = 2_000;
const PROBE_REUSE_MS = 1_000;

const engineState = z.enum(['ok', 'unreachable', 'full', 'damaged']);
type EngineState = z.infer<typeof engineState>;
const ledgerCounts = z.object({ status: z.string(), pending: z.number().int() });

const schema = {
	tags: ['Operators'],
	operationId: 'health',
	summary: 'Readiness: ok, or degraded while the usage ledger cannot write or the database is full',
	response: {
		200: z
			.object({ status: z.enum(['ok', 'degraded']), engines: z.record(engineState).optional(), ledger: ledgerCounts.optional() })
			.describe('Ready (degraded: usage lines are queued, not lost; or the database is full and writes answer 507)'),
		503: z
			.object({ status: z.literal('degraded'), engines: z.record(engineState), ledger: ledgerCounts })
			.describe('PostgreSQL or the bucket cannot be reached, the database is damaged, or shutting down; see Retry-After'),
	},
};

interface Probe {
	at: number;
	result: Promise<Record<string, EngineState>>;
}

export default async function healthRoutes(app: FastifyInstance): Promise<void> {
	let last: Probe | null = null;

	const probeOne = async (name: string, ping: (signal: AbortSignal) => Promise<void>): Promise<EngineState> => {
		const signal = AbortSignal.timeout(PROBE_TIMEOUT_MS);
		try {
			await Promise.race([
				ping(signal),
				new Promise<never>((_resolve, reject) => signal.addEventListener('abort', () => reject(new Error(`no answer in ${PROBE_TIMEOUT_MS} ms`)), { once: true })),
			]);
			return 'ok';
		} catch (error) {
			app.log.warn({ err: error, engine: name }, 'health check: engine unreachable');
			return 'unreachable';
		}
	};

	const probe = async (): Promise<Record<string, EngineState>> => {
		const engines: Record<string, EngineState> = {};
		const checks: Promise<void>[] = [];
		const { storage, fileMetadata } = app;
		if (storage.ping) checks.push(probeOne('storage', (signal) => storage.ping!(signal)).then((state) => void (engines.storage = state)));
		if (fileMetadata.ping) checks.push(probeOne('database', () => fileMetadata.ping!()).then((state) => void (engines.database = state)));
		await Promise.all(checks);
		return engines;
	};

	// Known without a probe, and never stale: the last write or check of the embedded database said so.
	const withCondition = (probed: Record<string, EngineState>): Record<string, EngineState> => {
		const condition = app.fileMetadata.condition?.() ?? 'ok';
		return condition !== 'ok' && probed.database === 'ok' ? { ...probed, database: condition } : probed;
	};

	const engines = () => {
		if (!last || Date.now() - last.at > PROBE_REUSE_MS) last = { at: Date.now(), result: probe() };
		return last.result;
	};

	app.withTypeProvider<ZodTypeProvider>().get('/healthz', { schema }, async (_request, reply) => {
		const states = withCondition(await engines());
		const ledger = app.usageLedger.health();
		const ledgerCounts = { status: ledger.status, pending: ledger.pending };
		if (Object.values(states).some((state) => state === 'unreachable' || state === 'damaged')) {
			return reply.status(503).header('retry-after', '2').send({ status: 'degraded' as const, engines: states, ledger: ledgerCounts });
		}
		if (states.database === 'full') return { status: 'degraded' as const, engines: states, ledger: ledgerCounts };
		return ledger.status === 'ok' ? { status: 'ok' as const } : { status: 'degraded' as const, ledger: ledgerCounts };
	});
}
