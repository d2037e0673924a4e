/**
 * The service's metrics in Prometheus' text format, on a registry of their own (prom-client's
 * global one would mix in whatever else the process registers, and two apps in one process,
 * as in tests, would collide). Process metrics come from prom-client's default collectors.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { BudgetAlertKind, GenerationObservation, MarkingObservation, ServiceMetrics, SweepObservation, UploadObservation, WebhookDeliveryOutcome } from './service-metrics';
import { registerScrapeGauges, type ScrapeReads } from './scrape-gauges';
import { BUDGET_EXCEEDED } from '../keys/managed-key';

/** Seconds: from a fast cached answer to a slow generation near its time limit. */
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
/** Seconds: a pass over nothing to a pass over a day's worth of expired files in a slow bucket. */
const SWEEP_BUCKETS = [0.01, 0.05, 0.25, 1, 5, 30, 120, 600];
const GENERATION_BUCKETS = [0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300];
/** Seconds: from a small PNG, marked almost at once, to a large video-sized image in a queue. */
const MARKING_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5];

interface HttpObservation {
	method: string;
	/** A route pattern (`/files/:id`) or UNMATCHED_ROUTE, never a raw URL. */
	route: string;
	status: number;
	seconds: number;
}

/** The one label value of every request no route matched (scanners, typos): no raw paths. */
export const UNMATCHED_ROUTE = 'unmatched';

export class PrometheusMetrics implements ServiceMetrics {
	readonly registry = new Registry();
	readonly contentType = this.registry.contentType;
	private readonly httpRequests: Counter<'method' | 'route' | 'status'>;
	private readonly httpDuration: Histogram<'method' | 'route'>;
	private readonly generations: Counter<'model' | 'provider' | 'outcome'>;
	private readonly generationDuration: Histogram<'model' | 'provider'>;
	private readonly generationCost: Counter<'model'>;
	private readonly markingDuration: Histogram<'thread'>;
	private readonly uploads: Counter<'kind' | 'outcome'>;
	private readonly uploadBytes: Counter<'kind'>;
	private readonly providerErrors: Counter<'provider' | 'code'>;
	private readonly budgetRefusals: Counter;
	private readonly sweeps: Counter<'outcome'>;
	private readonly lastSweep: Gauge;
	private readonly sweepDuration: Histogram;
	private readonly webhookDeliveries: Counter<'outcome'>;
	private readonly budgetAlerts: Counter<'kind'>;

	/** `ledgerPending`: usage lines not yet durable; the rest is read at each scrape (scrape-gauges.ts). */
	constructor(options: { ledgerPending: () => number } & ScrapeReads) {
		const registers = [this.registry];
		collectDefaultMetrics({ register: this.registry });
		this.httpRequests = new Counter({ name: 'imagegen_http_requests_total', help: 'HTTP requests answered, by route pattern and status', labelNames: ['method', 'route', 'status'], registers });
		this.httpDuration = new Histogram({ name: 'imagegen_http_request_duration_seconds', help: 'Time to answer an HTTP request', labelNames: ['method', 'route'], buckets: HTTP_BUCKETS, registers });
		this.generations = new Counter({ name: 'imagegen_generations_total', help: 'Generations by model, the provider that served (or failed last) and outcome (success or the error code)', labelNames: ['model', 'provider', 'outcome'], registers });
		this.generationDuration = new Histogram({ name: 'imagegen_generation_duration_seconds', help: 'Time a generation took, provider and re-hosting included', labelNames: ['model', 'provider'], buckets: GENERATION_BUCKETS, registers });
		this.generationCost = new Counter({ name: 'imagegen_generation_cost_usd_total', help: 'US dollars charged for generations', labelNames: ['model'], registers });
		this.markingDuration = new Histogram({ name: 'imagegen_marking_duration_seconds', help: 'Time to mark an image with its provenance (XMP and signed C2PA), by thread: event_loop (small images) or worker (queue wait included)', labelNames: ['thread'], buckets: MARKING_BUCKETS, registers });
		this.uploads = new Counter({ name: 'imagegen_uploads_total', help: 'Uploads by media kind and outcome (success or the error code)', labelNames: ['kind', 'outcome'], registers });
		this.uploadBytes = new Counter({ name: 'imagegen_upload_bytes_total', help: 'Bytes stored by uploads', labelNames: ['kind'], registers });
		this.providerErrors = new Counter({ name: 'imagegen_provider_errors_total', help: 'Failures of a model host, by host and error code (fallbacks included)', labelNames: ['provider', 'code'], registers });
		this.budgetRefusals = new Counter({ name: 'imagegen_budget_refusals_total', help: 'Requests refused because a key’s budget was spent (402 budget_exceeded)', registers });
		this.sweeps = new Counter({ name: 'imagegen_sweeps_total', help: 'Passes of the sweeper over expired files and idempotency entries, by outcome (success or failed)', labelNames: ['outcome'], registers });
		this.sweepDuration = new Histogram({ name: 'imagegen_sweep_duration_seconds', help: 'Time one pass of the sweeper took', buckets: SWEEP_BUCKETS, registers });
		this.lastSweep = new Gauge({ name: 'imagegen_last_sweep_success_timestamp_seconds', help: 'When the sweeper last finished a pass without a failure (Unix seconds; alert when it falls behind)', registers });
		this.webhookDeliveries = new Counter({
			name: 'imagegen_webhook_deliveries_total',
			help: 'Webhook delivery attempts by outcome: delivered (2xx), retried (failed, tried again later) or failed (given up); and deliveries dropped (their key had too many pending) or expired (pending past the retry window)',
			labelNames: ['outcome'],
			registers,
		});
		// Every outcome reads 0 from the start, so a rate over `failed` exists before the first failure.
		for (const outcome of ['delivered', 'retried', 'failed', 'dropped', 'expired']) this.webhookDeliveries.inc({ outcome }, 0);
		this.budgetAlerts = new Counter({ name: 'imagegen_budget_alerts_total', help: 'Budget alerts enqueued for --alert-webhook, by kind: threshold (past 80 % of a budget) or exhausted', labelNames: ['kind'], registers });
		for (const kind of ['threshold', 'exhausted']) this.budgetAlerts.inc({ kind }, 0);
		new Gauge({
			name: 'imagegen_usage_ledger_pending',
			help: 'Usage lines accepted but not yet durable (non-zero while the ledger’s store fails)',
			registers,
			collect() {
				this.set(options.ledgerPending());
			},
		});
		registerScrapeGauges(this.registry, options);
	}

	http({ method, route, status, seconds }: HttpObservation): void {
		this.httpRequests.inc({ method, route, status: String(status) });
		this.httpDuration.observe({ method, route }, seconds);
	}

	generation({ model, provider, outcome, seconds, costUsd }: GenerationObservation): void {
		this.generations.inc({ model, provider, outcome });
		// Refused by the shared generation runner, so counted for every way in (HTTP and MCP alike).
		if (outcome === BUDGET_EXCEEDED) this.budgetRefusals.inc();
		this.generationDuration.observe({ model, provider }, seconds);
		if (costUsd > 0) this.generationCost.inc({ model }, costUsd);
	}

	marking({ thread, seconds }: MarkingObservation): void {
		this.markingDuration.observe({ thread }, seconds);
	}

	sweep({ seconds, succeeded }: SweepObservation): void {
		this.sweeps.inc({ outcome: succeeded ? 'success' : 'failed' });
		this.sweepDuration.observe(seconds);
		if (succeeded) this.lastSweep.set(Date.now() / 1000);
	}

	providerError(provider: string, code: string): void {
		this.providerErrors.inc({ provider, code });
	}

	upload({ kind, outcome, bytes }: UploadObservation): void {
		this.uploads.inc({ kind, outcome });
		if (bytes > 0) this.uploadBytes.inc({ kind }, bytes);
	}

	webhookDelivery(outcome: WebhookDeliveryOutcome, count = 1): void {
		this.webhookDeliveries.inc({ outcome }, count);
	}

	budgetAlert(kind: BudgetAlertKind): void {
		this.budgetAlerts.inc({ kind });
	}

	async text(): Promise<string> {
		return await this.registry.metrics();
	}
}
