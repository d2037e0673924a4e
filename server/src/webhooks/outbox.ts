/**
 * The webhook outbox: what the rest of the service hands an event to, and the loop that delivers
 * it. Enqueueing is one durable write and all a request or a job ever waits for; the loop runs on
 * its own timer with at most `concurrency` attempts at once, each with its own time limit, and at
 * most a few of them for one receiver, so a receiver that hangs or answers 500 for ever costs a few
 * sockets, never a generation's time nor another receiver's deliveries.
 *
 * At least once: a delivery is retried (same `webhook-id`, same body, a fresh timestamp and
 * signature) after each time-out or non-2xx with growing pauses, the first within 60 s, for about
 * eight hours, then kept as failed for the operator until the retention sweeps it. Pending ones
 * survive restarts (they are rows) and, on many replicas, are claimed with a lease so that two
 * replicas do not send one at the same time.
 *
 * The backlog is bounded: a key has at most `maxPendingPerKey` deliveries pending (the next is
 * refused, logged and counted as `dropped`), and one still pending once the retry window has passed
 * (it waited behind receivers that hang, which drain a few a minute) is swept as `expired`.
 */
import { randomUUID } from 'node:crypto';
import type { SqlStatement } from '../db/sql-adapter';
import type { HostResolver } from '../net/safe-fetch';
import { inSpan, markFailed } from '../telemetry/spans';
import { sendDelivery } from './send-delivery';
import { SERVICE_SECRET_NAME, formatSecret, keySigningSecret, newServiceSecret, signedHeaders, type SignedHeaders } from './signing';
import { originOf, shortError, type AttemptTarget, type BudgetAlertMark, type ClaimedDelivery, type NewDelivery, type OutboxStore } from './outbox-store';

/**
 * Pauses after the 1st, 2nd, … failed attempt: 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, 2 h, 4 h —
 * nine attempts over 7 h 43 min, enough for a receiver's restart or a night's deploy; the ninth
 * failure gives up.
 */
export const RETRY_PAUSES_MS = [5_000, 30_000, 120_000, 600_000, 1_800_000, 3_600_000, 7_200_000, 14_400_000] as const;
/**
 * How long a delivery may stay pending: the pauses' 7 h 43 min and a margin for attempts that
 * waited for a slot; one still pending after it is swept (DESIGN: retried for at least an hour).
 */
export const RETRY_WINDOW_MS = 8 * 3_600_000;
/**
 * Deliveries one key may have pending: what its receivers, all hanging, would take hours to drain,
 * while a key that makes more than this in a retry window is never left with a table that grows.
 */
const MAX_PENDING_PER_KEY = 1_000;
/** One attempt, DNS, connect and answer included (the spec's receivers answer at once and work later). */
const ATTEMPT_TIMEOUT_MS = 10_000;
/** A claim outlives any attempt: a lease that ends means the claiming process died. */
const LEASE_MS = 60_000;
const POLL_EVERY_MS = 1_000;
const DEFAULT_CONCURRENCY = 8;
/**
 * Attempts open at once to one origin, and to one key's receivers together: a host that hangs
 * holds 2 of the 8, a key whose every receiver hangs 4 (its other receivers still get 2), so the
 * rest always serve everyone else. Per origin, since one slow host may serve many keys; per key,
 * since one caller may name many slow hosts.
 */
const PER_ORIGIN = 2;
const PER_KEY = 4;
/** Given-up deliveries are looked for at most this often per process. */
const SWEEP_EVERY_MS = 60_000;

/**
 * An attempt's end (`delivered`, `retried`, `failed`: given up), or a delivery that never got its
 * attempts: `dropped` at enqueue (its key had too many pending), `expired` (pending past the window).
 */
export type DeliveryOutcome = 'delivered' | 'retried' | 'failed' | 'dropped' | 'expired';

export interface OutboxLog {
	warn(details: object, message: string): void;
	error(details: object, message: string): void;
}

export interface OutboxOptions {
	/** Lifts the address guard at delivery (`--webhook-allow-private`). */
	allowPrivate: boolean;
	/** How long a given-up delivery is kept (the service's retention). */
	keepFailedMs: number;
	log: OutboxLog;
	/** `count`: how many had this outcome at once (a sweep's expired); 1 when absent. */
	onOutcome?: (outcome: DeliveryOutcome, count?: number) => void;
	resolve?: HostResolver;
	now?: () => number;
	concurrency?: number;
	perOrigin?: number;
	perKey?: number;
	attemptTimeoutMs?: number;
	maxPendingPerKey?: number;
	/**
	 * A managed key's current secret hash, which its signing secret is derived from (null: a flat
	 * key, or none); asked at each attempt, so one after a rotation is signed with the new secret.
	 */
	currentSecretHash?: (apiKeyId: string) => Promise<string | null>;
}

/**
 * What is enqueued: `signingKeyId` names the API key whose secret signs it (null: unsigned); `id`
 * its delivery's id when the event has one of its own (a job ends once), a fresh one otherwise.
 */
export interface OutgoingEvent {
	id?: string;
	url: string;
	signingKeyId: string | null;
	type: string;
	body: string;
}

export class WebhookOutbox {
	private readonly now: () => number;
	private readonly concurrency: number;
	private readonly perOrigin: number;
	private readonly perKey: number;
	/** Each attempt under way, with whom it is busy. */
	private readonly inFlight = new Map<Promise<void>, AttemptTarget>();
	private readonly stopping = new AbortController();
	private timer: NodeJS.Timeout | null = null;
	private polling: Promise<void> | null = null;
	private pollAgain = false;
	private lastSweepAt = -Infinity;
	private secret: Promise<Buffer> | null = null;

	constructor(
		readonly store: OutboxStore,
		private readonly options: OutboxOptions,
	) {
		this.now = options.now ?? Date.now;
		this.concurrency = options.concurrency ?? DEFAULT_CONCURRENCY;
		this.perOrigin = options.perOrigin ?? PER_ORIGIN;
		this.perKey = options.perKey ?? PER_KEY;
	}

	/**
	 * One durable write; the loop is woken so a delivery goes out at once, not at the next poll.
	 * Answers the delivery's id, or null when its key had too many pending (logged and counted).
	 */
	async enqueue(event: OutgoingEvent): Promise<string | null> {
		const delivery = newDelivery(event);
		const maxPending = this.options.maxPendingPerKey ?? MAX_PENDING_PER_KEY;
		if (!(await this.store.enqueue(delivery, this.now(), maxPending))) {
			this.dropped(event);
			return null;
		}
		this.wakeFor(delivery);
		return delivery.id;
	}

	/**
	 * The enqueue of `event` as a statement of another store's write (a job's end, in its
	 * transaction); `committed` is told once that write committed.
	 */
	enqueueStatement(event: OutgoingEvent & { id: string }): SqlStatement {
		return this.store.enqueueStatement(newDelivery(event), this.now(), this.options.maxPendingPerKey ?? MAX_PENDING_PER_KEY);
	}

	/** A delivery written by another store's write has committed: the loop is woken for it, or its drop (its key had too many pending) told. */
	async committed(event: OutgoingEvent & { id: string }): Promise<void> {
		const delivery = newDelivery(event);
		if (await this.store.isPending(delivery.id)) this.wakeFor(delivery);
		else this.dropped(event);
	}

	/** Enqueues an alert unless this key, period and kind had one; answers whether it did. */
	async enqueueAlert(mark: BudgetAlertMark, event: OutgoingEvent): Promise<boolean> {
		const delivery = newDelivery(event);
		const enqueued = await this.store.enqueueAlert(mark, delivery, this.now());
		if (enqueued) this.wakeFor(delivery);
		return enqueued;
	}

	/**
	 * The `whsec_…` secret a key's receivers verify with; `secretHash`: the hash of the managed key's
	 * secret that asks (signing.ts), null for a flat key.
	 */
	async secretFor(apiKeyId: string, secretHash: string | null = null): Promise<string> {
		return formatSecret(keySigningSecret(await this.serviceSecret(), apiKeyId, secretHash));
	}

	/** Delivers what is due now and then every second; pending rows from before a restart included. */
	start(): void {
		if (this.timer || this.stopping.signal.aborted) return;
		this.timer = setInterval(() => this.wake(), POLL_EVERY_MS);
		this.timer.unref();
		this.wake();
	}

	/** Stops claiming; attempts under way are cut off and left to their lease (at least once). */
	async stop(): Promise<void> {
		if (this.timer) clearInterval(this.timer);
		this.timer = null;
		this.stopping.abort();
		await this.polling;
		await Promise.allSettled([...this.inFlight.keys()]);
	}

	/**
	 * Claims and starts what is due, up to the free attempt slots; resolves once they are started.
	 * Asked again while it runs, it runs once more when done: what became due meanwhile is not left
	 * for the next tick.
	 */
	poll(): Promise<void> {
		if (this.polling) {
			this.pollAgain = true;
			return this.polling;
		}
		this.polling = (async () => {
			do {
				this.pollAgain = false;
				await this.claimAndSend();
			} while (this.pollAgain && !this.stopping.signal.aborted);
		})().finally(() => {
			this.polling = null;
		});
		return this.polling;
	}

	/** Resolves once every attempt started so far has ended and been recorded. */
	async settled(): Promise<void> {
		while (this.polling || this.inFlight.size > 0) {
			await this.polling;
			await Promise.allSettled([...this.inFlight.keys()]);
		}
	}

	private dropped(event: OutgoingEvent): void {
		this.options.onOutcome?.('dropped');
		const pending = this.options.maxPendingPerKey ?? MAX_PENDING_PER_KEY;
		this.options.log.warn({ keyId: event.signingKeyId, event: event.type, pending }, 'webhook delivery dropped: the key has too many pending');
	}

	/** Only a started outbox delivers: one built to enqueue (a command, a test) sends nothing. */
	private wake(): void {
		if (!this.timer || this.stopping.signal.aborted) return;
		void this.poll();
	}

	/**
	 * Wakes the loop for a delivery only if it may go now: one to a receiver at its cap waits for a
	 * slot's end or the next tick, so a burst to a receiver that hangs costs no claim per enqueue.
	 */
	private wakeFor(delivery: NewDelivery): void {
		if (this.inFlight.size >= this.concurrency) return;
		const origin = originOf(delivery.url);
		let sameOrigin = 0;
		let sameKey = 0;
		for (const target of this.inFlight.values()) {
			if (target.origin === origin) sameOrigin += 1;
			if (target.signingKeyId === delivery.signingKeyId) sameKey += 1;
		}
		if (sameOrigin >= this.perOrigin || sameKey >= this.perKey) return;
		this.wake();
	}

	private async claimAndSend(): Promise<void> {
		try {
			const now = this.now();
			await this.sweepNowAndThen(now);
			const free = this.concurrency - this.inFlight.size;
			const caps = { perOrigin: this.perOrigin, perKey: this.perKey, busy: [...this.inFlight.values()] };
			const claimed = await this.store.claimDue(now, free, LEASE_MS, caps);
			for (const delivery of claimed) {
				const attempt = this.attempt(delivery).finally(() => {
					this.inFlight.delete(attempt);
					// A slot is free: what waits for one goes now, not at the next tick.
					this.wake();
				});
				this.inFlight.set(attempt, { origin: delivery.origin, signingKeyId: delivery.signingKeyId });
			}
			// A claim may leave room a full origin held back (outbox-store.ts): the next one, counting it busy, takes it.
			if (claimed.length > 0 && claimed.length < free) this.pollAgain = true;
		} catch (error) {
			this.options.log.error({ err: error }, 'claiming webhook deliveries failed');
		}
	}

	private async attempt(delivery: ClaimedDelivery): Promise<void> {
		try {
			const secret = delivery.signingKeyId === null ? null : await this.signingSecret(delivery.signingKeyId);
			const headers = signedHeaders(delivery.id, Math.floor(this.now() / 1000), delivery.body, secret);
			const sent = await this.send(delivery, headers);
			// Cut off by the shutdown: the lease hands it to the next start or another replica.
			if (this.stopping.signal.aborted) return;
			if (sent.received) {
				await this.store.delivered(delivery);
				this.options.onOutcome?.('delivered');
				return;
			}
			await this.failed(delivery, shortError(sent.error));
		} catch (error) {
			this.options.log.error({ err: error, webhookId: delivery.id }, 'recording a webhook delivery attempt failed');
		}
	}

	/** One attempt's POST, in its own span: a receiver that did not take it ends the span with status ERROR. */
	private send(delivery: ClaimedDelivery, headers: SignedHeaders): Promise<Awaited<ReturnType<typeof sendDelivery>>> {
		const attributes = {
			'imagegen.webhook.id': delivery.id,
			'imagegen.webhook.event': delivery.eventType,
			'imagegen.webhook.attempt': delivery.attempts + 1,
			'server.address': new URL(delivery.origin).hostname,
		};
		return inSpan('webhook delivery', { attributes }, async (span) => {
			const sent = await sendDelivery(delivery.url, delivery.body, headers, {
				allowPrivate: this.options.allowPrivate,
				timeoutMs: this.options.attemptTimeoutMs ?? ATTEMPT_TIMEOUT_MS,
				resolve: this.options.resolve,
				signal: this.stopping.signal,
			});
			if (!sent.received) markFailed(span, 'webhook_not_received', sent.error);
			return sent;
		});
	}

	private async failed(delivery: ClaimedDelivery, error: string): Promise<void> {
		const attempt = delivery.attempts + 1;
		const pause = RETRY_PAUSES_MS[delivery.attempts];
		const where = { webhookId: delivery.id, event: delivery.eventType, attempt, error };
		if (pause === undefined) {
			await this.store.giveUp(delivery, this.now(), error);
			this.options.onOutcome?.('failed');
			this.options.log.error(where, 'webhook delivery given up');
			return;
		}
		await this.store.retryAt(delivery, this.now() + pause, error);
		this.options.onOutcome?.('retried');
		this.options.log.warn({ ...where, retryInSeconds: pause / 1000 }, 'webhook delivery failed; it will be retried');
	}

	private async sweepNowAndThen(now: number): Promise<void> {
		if (now - this.lastSweepAt < SWEEP_EVERY_MS) return;
		this.lastSweepAt = now;
		await this.store.sweepFailed(now - this.options.keepFailedMs);
		const expired = await this.store.sweepExpired(now - RETRY_WINDOW_MS, now);
		if (expired === 0) return;
		this.options.onOutcome?.('expired', expired);
		this.options.log.error({ deliveries: expired, hours: RETRY_WINDOW_MS / 3_600_000 }, 'webhook deliveries expired: not delivered within the retry window');
	}

	/** The key's secret as it is now: every attempt after a rotation, a retry of an older delivery too, is signed with the new one. */
	private async signingSecret(apiKeyId: string): Promise<Buffer> {
		const secretHash = (await this.options.currentSecretHash?.(apiKeyId)) ?? null;
		return keySigningSecret(await this.serviceSecret(), apiKeyId, secretHash);
	}

	private serviceSecret(): Promise<Buffer> {
		this.secret ??= this.store.serviceSecret(SERVICE_SECRET_NAME, newServiceSecret).catch((error: unknown) => {
			this.secret = null;
			throw error;
		});
		return this.secret;
	}
}

function newDelivery(event: OutgoingEvent): NewDelivery {
	return { id: event.id ?? `msg_${randomUUID().replaceAll('-', '')}`, url: event.url, signingKeyId: event.signingKeyId, body: event.body, eventType: event.type };
}
