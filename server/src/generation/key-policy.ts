/**
 * What a key may generate, enforced where every way in (the HTTP route, the MCP endpoint, …)
 * passes: the shared generation runner. A model outside the key's list is refused before any
 * provider is called; a budgeted key has the generation's price reserved first and is refused with
 * a 402 when spent + price would pass its limit (reservations of generations in flight count as
 * spent). The reservation is settled at the actual cost when the generation succeeds and released
 * when it fails, so a failure costs nothing.
 */
import { randomUUID } from 'node:crypto';
import { ImageGenError } from '../../../core/errors';
import { roundUsd } from '../../../core/units';
import type { ApiKeyPolicy } from '../keys/authenticate';
import type { KeyStore } from '../keys/key-store';
import { BUDGET_EXCEEDED, periodEnd, periodStart, type KeyBudget } from '../keys/managed-key';

export function checkModelAllowed(key: ApiKeyPolicy, model: string): void {
	if (key.models === null || (key.models as readonly string[]).includes(model)) return;
	throw new ImageGenError(403, `This API key may not use the model '${model}'; it may use: ${key.models.join(', ')}`, {
		param: 'model',
		code: 'model_not_allowed',
	});
}

/** A generation's price, reserved in its key's budget while it runs. */
export interface BudgetReservation {
	/** The generation succeeded: `costUsd` becomes spend. */
	settle(costUsd: number): Promise<void>;
	/** The generation failed: the reservation is given back, nothing spent. */
	release(): Promise<void>;
}

export interface BudgetGate {
	/** Null for a key without a budget; throws the 402 when the price does not fit. */
	reserve(key: ApiKeyPolicy, priceUsd: number): Promise<BudgetReservation | null>;
}

export function createBudgetGate(store: KeyStore, options: { now?: () => Date | Promise<Date> }): BudgetGate {
	const now = options.now ?? (() => new Date());
	return {
		async reserve(key, priceUsd) {
			if (!key.budget) return null;
			const at = await now();
			const id = randomUUID();
			const outcome = await store.reserve(
				{
					id,
					keyId: key.id,
					amountUsd: priceUsd,
					limitUsd: key.budget.limitUsd,
					since: periodStart(key.budget.period, at),
				},
				at,
			);
			if (!outcome.admitted) throw budgetExceeded(key.budget, outcome.spentUsd, priceUsd, at);
			return { settle: (costUsd) => store.settle(id, costUsd), release: () => store.release(id) };
		},
	};
}

const PERIOD_NAMES = { day: 'daily (UTC)', month: 'monthly (UTC)', total: 'total' } as const;

function budgetExceeded(budget: KeyBudget, spentUsd: number, priceUsd: number, at: Date): ImageGenError {
	const resets = periodEnd(budget.period, at);
	const when = resets ? `it resets at ${resets.toISOString()}` : 'it does not reset; ask the operator to raise it';
	return new ImageGenError(
		402,
		`Budget exceeded: this API key has spent $${roundUsd(spentUsd)} of its ${PERIOD_NAMES[budget.period]} budget of $${budget.limitUsd}, ` +
			`and this generation costs $${roundUsd(priceUsd)}; ${when}`,
		{ code: BUDGET_EXCEEDED },
	);
}
