/**
 * A live /metrics: the service built in process, made to do what the dashboard and the alerts
 * watch — an upload, a generation whose first host (Pruna, on a port nothing listens on) fails
 * over to the sandbox and is marked, an async generation delivered to a webhook receiver on
 * loopback, a managed key that spends its budget (its alerts sent to --alert-webhook, another
 * receiver on loopback) and is refused, a health check and a stray path — then scraped with the
 * admin key. What it exports is read back as families of samples with the label values seen.
 */
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import type { FastifyInstance } from 'fastify';
import { MODELS } from '../../../core/models';
import { startInProcessServer, type InProcessServer } from '../../server/support/app';
import { closedPort } from '../../server/support/closed-port';
import { call, createManagedKey, eventually, postJson, uploadFile } from '../../server/support/http';
import { makeImage } from '../../server/support/media';
import { FAST_HOSTS } from '../../server/support/providers';
import { startReceiver } from '../../server/support/webhook-receiver';
import { readPromql } from './promql';

const ADMIN_KEY = 'admin-key-0123456789abcdef';

export interface Family {
	type: string;
	/** Samples in the scrape (a histogram's `_bucket`, `_sum` and `_count` lines included). */
	samples: number;
	/** Every label the family's samples carry, with the values seen. */
	labels: Map<string, Set<string>>;
}

export interface LiveMetrics {
	families: Map<string, Family>;
	/** Whether the app has a route with this pattern (the `route` label's values), for any method. */
	hasRoute(pattern: string): boolean;
	stop(): Promise<void>;
}

export async function startLiveMetrics(): Promise<LiveMetrics> {
	const alerts = await startReceiver('/alerts');
	const server = await startInProcessServer({
		args: ['--log-level', 'silent', '--admin-key', ADMIN_KEY, '--allow-private-urls', '--webhook-allow-private', '--alert-webhook', alerts.url, '--providers', 'p-image=pruna|sandbox'],
		env: { PRUNA_API_KEY: 'pruna-key', PRUNA_BASE_URL: `http://127.0.0.1:${await closedPort()}/v1` },
		parts: { providerTiming: FAST_HOSTS },
	});
	const stop = async () => {
		await server.stop({ removeData: true });
		await alerts.close();
	};
	try {
		await serveWhatIsWatched(server);
		// The budget's alerts (threshold and exhausted) were delivered.
		if (!(await eventually(() => alerts.received.length === 2))) throw new Error(`${alerts.received.length} budget alerts were delivered, not 2`);
		const scraped = await call<string>(server, '/metrics', { auth: `Bearer ${ADMIN_KEY}` });
		if (scraped.status !== 200) throw new Error(`GET /metrics answered ${scraped.status}`);
		return { families: familiesOf(scraped.body), hasRoute: (pattern) => hasRoute(server.app, pattern), stop };
	} catch (error) {
		await stop();
		throw error;
	}
}

async function serveWhatIsWatched(server: InProcessServer): Promise<void> {
	const expectStatus = (what: string, status: number, wanted: number) => {
		if (status !== wanted) throw new Error(`${what} answered ${status}, not ${wanted}`);
	};
	expectStatus('an upload', (await uploadFile(server, await makeImage('png', 40, 30), {}, { fileName: 'a.png', mimeType: 'image/png' })).status, 200);
	expectStatus('a generation', (await postJson(server, '/v1/images/generations', { model: 'p-image', prompt: 'A kite', response_format: 'b64_json' })).status, 200);
	expectStatus('GET /healthz', (await call(server, '/healthz', { auth: null })).status, 200);
	expectStatus('a stray path', (await call(server, '/no-such-route')).status, 404);

	const receiver = await startReceiver();
	try {
		const created = await call(server, '/v1/images/generations', {
			method: 'POST',
			headers: { prefer: 'respond-async', 'content-type': 'application/json' },
			body: JSON.stringify({ model: 'p-image', prompt: 'A lighthouse', response_format: 'url', webhook_url: receiver.url }),
		});
		expectStatus('an async generation', created.status, 202);
		if (!(await eventually(() => receiver.received.length === 1))) throw new Error('the webhook was not delivered');
	} finally {
		await receiver.close();
	}

	const managed = await createManagedKey(server, ADMIN_KEY, { name: 'one image', budget_usd: MODELS['p-image'].priceUsd });
	const asManaged = { auth: `Bearer ${managed.key}` };
	expectStatus('a generation within budget', (await postJson(server, '/v1/images/generations', { model: 'p-image', prompt: 'One', response_format: 'b64_json' }, asManaged)).status, 200);
	expectStatus('a generation past the budget', (await postJson(server, '/v1/images/generations', { model: 'p-image', prompt: 'Two', response_format: 'b64_json' }, asManaged)).status, 402);
}

/**
 * Families by name and type from Prometheus' text format (parse-prometheus-text-format), and the
 * label values of every sample line, whose `name{labels}` is a PromQL series selector. The text
 * parser is not asked for those: it folds a labelled histogram's samples together without labels.
 */
export function familiesOf(text: string): Map<string, Family> {
	const families = new Map<string, Family>(parsePrometheusTextFormat(text).map(({ name, type }) => [name, { type, samples: 0, labels: new Map() }]));
	for (const line of text.split('\n')) {
		if (line === '' || line.startsWith('#')) continue;
		const { selectors } = readPromql(line.slice(0, line.lastIndexOf(' ')));
		const [{ metric, matchers }] = selectors as [(typeof selectors)[number]];
		const family = families.get(metric!) ?? families.get(metric!.replace(/_(bucket|sum|count)$/, ''));
		if (!family) throw new Error(`a sample of no family: ${line}`);
		family.samples += 1;
		for (const { label, value } of matchers) {
			if (!family.labels.has(label)) family.labels.set(label, new Set());
			family.labels.get(label)!.add(value);
		}
	}
	return families;
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

function hasRoute(app: FastifyInstance, pattern: string): boolean {
	return METHODS.some((method) => app.hasRoute({ method, url: pattern }));
}
