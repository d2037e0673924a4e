/**
 * What the admin API and `imagegen-server keys` do to managed keys, on whichever engine holds
 * them, and the key object both answer with (secrets only in the create and rotate answers).
 */
import { z } from 'zod/v3';
import { invalidField } from '../../../core/errors';
import { roundUsd } from '../../../core/units';
import type { CreateKeyRequest, UpdateKeyRequest } from './key-schemas';
import type { KeyPatch, KeyStore } from './key-store';
import { BUDGET_PERIODS, newKeyId, newSecret, periodEnd, periodStart, type KeyBudget, type ManagedKey } from './managed-key';

/** The key object of every answer; its shape is the admin routes' documented answer. */
export const keyObjectSchema = z
	.object({
		object: z.literal('api_key'),
		id: z.string(),
		name: z.string(),
		prefix: z.string(),
		created_at: z.string().datetime(),
		expires_at: z.string().datetime().nullable(),
		blocked: z.boolean(),
		models: z.array(z.string()).nullable(),
		rate_limit_per_minute: z.number().int().nullable(),
		budget: z.object({ limit_usd: z.number(), period: z.enum(BUDGET_PERIODS), spent_usd: z.number(), resets_at: z.string().datetime().nullable() }).nullable(),
	})
	.describe('The key');
export type KeyObject = z.infer<typeof keyObjectSchema>;

type KeyObjectWithSecret = KeyObject & { key: string };

interface KeyAdminOptions {
	/** Told after every change, so this process drops what it cached about keys at once. */
	onChange?: () => void;
	/** Stamps changes and judges budget periods (the key store's clock). */
	now?: () => Date | Promise<Date>;
}

export class KeyAdmin {
	private readonly now: () => Date | Promise<Date>;

	constructor(
		readonly store: KeyStore,
		private readonly options: KeyAdminOptions = {},
	) {
		this.now = options.now ?? (() => new Date());
	}

	async create(request: CreateKeyRequest): Promise<KeyObjectWithSecret> {
		if (request.budget_period !== undefined && (request.budget_usd === undefined || request.budget_usd === null)) {
			throw invalidField('budget_period', "'budget_period' needs 'budget_usd' (the limit of that period)");
		}
		const secret = newSecret();
		const key: ManagedKey = {
			id: newKeyId(),
			name: request.name,
			prefix: secret.prefix,
			secretHash: secret.hash,
			previousSecretHash: null,
			previousValidUntil: null,
			createdAt: await this.now(),
			expiresAt: request.expires_at ?? null,
			blocked: false,
			revokedAt: null,
			models: request.models ?? null,
			rateLimitPerMinute: request.rate_limit_per_minute ?? null,
			budget: request.budget_usd ? { limitUsd: request.budget_usd, period: request.budget_period ?? 'total' } : null,
		};
		await this.store.create(key);
		this.options.onChange?.();
		return { ...(await this.view(key)), key: secret.secret };
	}

	async list(): Promise<KeyObject[]> {
		const keys = await this.store.list();
		return Promise.all(keys.map((key) => this.view(key)));
	}

	async get(id: string): Promise<KeyObject | null> {
		const key = await this.store.get(id);
		return key ? this.view(key) : null;
	}

	async update(id: string, request: UpdateKeyRequest): Promise<KeyObject | null> {
		const patch: KeyPatch = {
			name: request.name,
			expiresAt: request.expires_at,
			blocked: request.blocked,
			models: request.models,
			rateLimitPerMinute: request.rate_limit_per_minute,
		};
		if (request.budget_usd !== undefined || request.budget_period !== undefined) {
			// Only a change of the budget needs the current one (a period alone keeps the limit, and back).
			const current = await this.store.get(id);
			if (!current) return null;
			patch.budget = mergeBudget(current.budget, request);
		}
		const updated = await this.store.update(id, patch);
		this.options.onChange?.();
		return updated ? this.view(updated) : null;
	}

	async rotate(id: string, graceSeconds = 0): Promise<KeyObjectWithSecret | null> {
		const secret = newSecret();
		const previousValidUntil = graceSeconds > 0 ? new Date((await this.now()).getTime() + graceSeconds * 1000) : null;
		const rotated = await this.store.rotate(id, secret, previousValidUntil);
		this.options.onChange?.();
		return rotated ? { ...(await this.view(rotated)), key: secret.secret } : null;
	}

	async revoke(id: string): Promise<boolean> {
		const revoked = await this.store.revoke(id, await this.now());
		this.options.onChange?.();
		return revoked;
	}

	async view(key: ManagedKey): Promise<KeyObject> {
		const now = await this.now();
		let budget: KeyObject['budget'] = null;
		if (key.budget) {
			const spent = await this.store.spent(key.id, periodStart(key.budget.period, now));
			const resets = periodEnd(key.budget.period, now);
			budget = { limit_usd: key.budget.limitUsd, period: key.budget.period, spent_usd: roundUsd(spent), resets_at: resets ? resets.toISOString() : null };
		}
		return {
			object: 'api_key',
			id: key.id,
			name: key.name,
			prefix: key.prefix,
			created_at: key.createdAt.toISOString(),
			expires_at: key.expiresAt ? key.expiresAt.toISOString() : null,
			blocked: key.blocked,
			models: key.models ? [...key.models] : null,
			rate_limit_per_minute: key.rateLimitPerMinute,
			budget,
		};
	}
}

function mergeBudget(current: KeyBudget | null, request: UpdateKeyRequest): KeyBudget | null {
	if (request.budget_usd === null) {
		if (request.budget_period !== undefined) throw invalidField('budget_period', "'budget_period' cannot be set while 'budget_usd' is cleared (null)");
		return null;
	}
	const limitUsd = request.budget_usd ?? current?.limitUsd;
	if (limitUsd === undefined) {
		if (request.budget_period !== undefined) throw invalidField('budget_period', "'budget_period' needs 'budget_usd': this key has no budget yet");
		return null;
	}
	return { limitUsd, period: request.budget_period ?? current?.period ?? 'total' };
}
