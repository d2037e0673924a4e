/**
 * What the service reports to its operator, behind an interface so generation and upload code
 * record facts without knowing how they are exported (Prometheus: prometheus-metrics.ts). Label
 * values are only ever names from our own closed sets (models, providers, error codes, media
 * kinds, route patterns): never an id, a key, or anything a caller typed.
 */
export interface GenerationObservation {
	model: string;
	/** The host that served, or the one that failed last; `none` when none was asked. */
	provider: string;
	/** `success` or the error code. */
	outcome: string;
	seconds: number;
	/** Charged for this generation (0 when it failed). */
	costUsd: number;
}

export interface UploadObservation {
	/** `image`, `video`, or `unknown` when the upload failed before its kind was known. */
	kind: string;
	/** `success` or the error code. */
	outcome: string;
	/** Bytes stored (0 when it failed). */
	bytes: number;
}

export interface SweepObservation {
	seconds: number;
	/** False when any target (files, idempotency entries) failed this pass. */
	succeeded: boolean;
}

export interface MarkingObservation {
	/** Where the image was marked: `event_loop` (small images) or `worker`. */
	thread: 'event_loop' | 'worker';
	seconds: number;
}

export interface ServiceMetrics {
	generation(observation: GenerationObservation): void;
	marking(observation: MarkingObservation): void;
	sweep(observation: SweepObservation): void;
	providerError(provider: string, code: string): void;
	upload(observation: UploadObservation): void;
	/**
	 * One webhook attempt's end: `delivered`, `retried` (failed, tried again later) or `failed` (given
	 * up); or `count` deliveries that got no attempts: `dropped` (their key had too many pending) or
	 * `expired` (still pending past the retry window).
	 */
	webhookDelivery(outcome: WebhookDeliveryOutcome, count?: number): void;
	/** A budget alert enqueued for `--alert-webhook` (once per key, period, kind and budget). */
	budgetAlert(kind: BudgetAlertKind): void;
}

export type WebhookDeliveryOutcome = 'delivered' | 'retried' | 'failed' | 'dropped' | 'expired';

/** `threshold`: a key's spend passed 80 % of its budget; `exhausted`: it reached it, or was refused for it. */
export type BudgetAlertKind = 'threshold' | 'exhausted';

/** For code run without a service around it (tests that build a runner by hand). */
export const NO_METRICS: ServiceMetrics = {
	generation: () => undefined,
	marking: () => undefined,
	sweep: () => undefined,
	providerError: () => undefined,
	upload: () => undefined,
	webhookDelivery: () => undefined,
	budgetAlert: () => undefined,
};
