/**
 * `fastify.runGeneration`: the one generation runner of the service, and `fastify.budgets`, the
 * budget gate it and the video runner reserve through, shared by every way in
 * (POST /v1/images/generations, the MCP endpoint), so each enforces the caller's key policy
 * (models, budget) and records usage the same way. Callers pass `apiKey: request.apiKey`.
 */
import fp from 'fastify-plugin';
import { createBudgetGate, type BudgetGate } from '../generation/key-policy';
import { createGenerationRunner, type GenerationRunner } from '../generation/run-generation';
import { StoreClock } from '../keys/store-clock';
import { ownFileReader } from '../storage/own-file-inputs';
import { withBudgetAlerts } from '../webhooks/budget-alerts';

declare module 'fastify' {
	interface FastifyInstance {
		runGeneration: GenerationRunner;
		/** Keys' budgets, reserved before any host is called (images and videos alike), with their alerts. */
		budgets: BudgetGate;
	}
}

/** Input images of a generation request are held in memory while the provider works. */
const MAX_INPUT_IMAGE_BYTES = 50 * 1024 * 1024;

export default fp(
	async (fastify) => {
		const { config } = fastify;
		const clock = new StoreClock(fastify.keyStore);
		const now = () => clock.now();
		const gate = createBudgetGate(fastify.keyStore, { now });
		const budgets = config.alertWebhook ? withBudgetAlerts(gate, { url: config.alertWebhook, outbox: fastify.webhooks.outbox, keyStore: fastify.keyStore, now, log: fastify.log, onAlert: (kind) => fastify.metrics.budgetAlert(kind) }) : gate;
		fastify.decorate('budgets', budgets);
		const run = createGenerationRunner({
			providers: fastify.providers,
			prices: config.priceOverrides,
			timeoutMs: config.generationTimeoutMs,
			inputs: {
				fetchRemote: fastify.fetchRemote,
				maxInputImageBytes: Math.min(MAX_INPUT_IMAGE_BYTES, config.maxUploadBytes),
				maxImagePixels: config.maxImagePixels,
				readOwnFile: ownFileReader(fastify.hostedFiles),
			},
			hostedFiles: fastify.hostedFiles,
			imageWork: fastify.hostedFiles.imageWork,
			usageLedger: fastify.usageLedger,
			budgets,
			log: fastify.log,
			metrics: fastify.metrics,
			provenance: fastify.provenance.marker,
			provenanceRecords: fastify.provenanceRecords,
		});
		// A webhook target the address guard refuses is the request's 400, before anything is charged.
		// A job taken over after a restart was checked when it was asked for: a check failing now (a
		// DNS hiccup) must not fail a job whose host works on; each delivery is checked as it is sent.
		const runGeneration: GenerationRunner = async (generation, caller) => {
			if (generation.webhook_url !== undefined && !caller.resume) await fastify.webhooks.checkTarget(generation.webhook_url);
			return run(generation, caller);
		};
		fastify.decorate('runGeneration', runGeneration);
	},
	{ name: 'generation', dependencies: ['config', 'engines', 'providers', 'remote-fetch', 'hosted-files', 'metrics', 'provenance', 'webhooks'] },
);
