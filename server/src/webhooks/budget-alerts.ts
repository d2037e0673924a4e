/**
 * Budget alerts to the operator's `--alert-webhook`, through the outbox: `budget.threshold` once a
 * key's spend passes 80 % of its period's budget, `budget.exhausted` once it reaches the budget or
 * a generation is refused for it (a budget that prices do not divide evenly is never spent to the
 * cent). Each is sent once per key, period, kind and budget, whichever process or replica saw it
 * first (a row in the engines decides): a budget the operator changed, raised after an alert say,
 * is alerted again when it is passed in the same period.
 *
 * A gate around the budget gate: the check runs after a charge settles (or a refusal), never
 * before the generation, and a failing check is logged, never the generation's failure.
 * A Slack incoming webhook (hooks.slack.com) gets Slack's `{ "text": … }`; any other URL the
 * event `{ type, timestamp, data }`, unsigned (the URL is the operator's own).
 */
import { ImageGenError } from '../../../core/errors';
import { roundUsd } from '../../../core/units';
import type { BudgetGate } from '../generation/key-policy';
import type { ApiKeyPolicy } from '../keys/authenticate';
import type { KeyStore } from '../keys/key-store';
import { BUDGET_EXCEEDED, periodEnd, periodStart, type KeyBudget } from '../keys/managed-key';
import type { WebhookOutbox } from './outbox';
import type { BudgetAlertMark } from './outbox-store';

/** The share of a budget, in percent, past which `budget.threshold` is sent. */
const THRESHOLD_PERCENT = 80;

interface BudgetAlertOptions {
	url: string;
	outbox: WebhookOutbox;
	keyStore: Pick<KeyStore, 'spent'>;
	now: () => Date | Promise<Date>;
	log: { error(details: object, message: string): void };
	/** Told of each alert enqueued now (not of one this key, period, kind and budget already had). */
	onAlert?: (kind: Kind) => void;
}

type Kind = BudgetAlertMark['kind'];

export function withBudgetAlerts(gate: BudgetGate, options: BudgetAlertOptions): BudgetGate {
	const check = async (key: ApiKeyPolicy, refused: boolean) => {
		try {
			const budget = key.budget!;
			const at = await options.now();
			const since = periodStart(budget.period, at);
			const spentUsd = await options.keyStore.spent(key.id, since);
			// In whole micro-dollars, the stores' unit: 0.04 of 0.05 is 80 %, which 0.05 × 0.8 in floating point is not.
			const spent = Math.round(spentUsd * 1e6);
			const limit = Math.round(budget.limitUsd * 1e6);
			const kinds: Kind[] = [];
			if (spent * 100 >= limit * THRESHOLD_PERCENT) kinds.push('threshold');
			if (refused || spent >= limit) kinds.push('exhausted');
			for (const kind of kinds) {
				const mark = { keyId: key.id, period: periodName(budget, since), kind, limitUsd: budget.limitUsd };
				if (await options.outbox.enqueueAlert(mark, alertEvent(options.url, mark, budget, spentUsd, at))) options.onAlert?.(kind);
			}
		} catch (error) {
			options.log.error({ err: error, keyId: key.id }, 'checking a budget alert failed');
		}
	};
	return {
		async reserve(key, priceUsd) {
			let reservation;
			try {
				reservation = await gate.reserve(key, priceUsd);
			} catch (error) {
				if (key.budget && error instanceof ImageGenError && error.code === BUDGET_EXCEEDED) await check(key, true);
				throw error;
			}
			if (!reservation) return reservation;
			return {
				settle: async (costUsd) => {
					await reservation.settle(costUsd);
					await check(key, false);
				},
				release: () => reservation.release(),
			};
		},
	};
}

/** `day:2026-11-25`, `month:2026-11` or `total`: the period an alert is sent once in. */
function periodName(budget: KeyBudget, since: Date): string {
	if (budget.period === 'total') return 'total';
	const day = since.toISOString().slice(0, 10);
	return budget.period === 'day' ? `day:${day}` : `month:${day.slice(0, 7)}`;
}

function alertEvent(url: string, mark: BudgetAlertMark, budget: KeyBudget, spentUsd: number, at: Date) {
	const type = `budget.${mark.kind}`;
	const resets = periodEnd(budget.period, at);
	const data = {
		key_id: mark.keyId,
		period: budget.period,
		budget_usd: budget.limitUsd,
		spent_usd: roundUsd(spentUsd),
		resets_at: resets ? resets.toISOString() : null,
	};
	const body = isSlackWebhook(url)
		? { text: slackText(mark.kind, data) }
		: { type, timestamp: at.toISOString(), data };
	return { url, signingKeyId: null, type, body: JSON.stringify(body) };
}

function slackText(kind: Kind, data: { key_id: string; period: string; budget_usd: number; spent_usd: number; resets_at: string | null }): string {
	const what = kind === 'threshold' ? `has passed ${THRESHOLD_PERCENT} % of` : 'has spent';
	const resets = data.resets_at ? `; it resets at ${data.resets_at}` : '; it does not reset';
	return `imagegen: API key ${data.key_id} ${what} its ${data.period} budget: $${data.spent_usd} of $${data.budget_usd}${resets}.`;
}

/** Slack's incoming webhooks take `{ "text": … }` and refuse anything else. */
function isSlackWebhook(url: string): boolean {
	try {
		return new URL(url).hostname === 'hooks.slack.com';
	} catch {
		return false;
	}
}
