/**
 * Managed API keys: what an operator issues, limits and revokes while the service runs. Only the
 * SHA-256 of a secret is ever stored; the secret itself exists in the create and rotate answers.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { CatalogModelId } from '../../../core/video-models';

export const BUDGET_PERIODS = ['day', 'month', 'total'] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];

export interface KeyBudget {
	limitUsd: number;
	period: BudgetPeriod;
}

/** The error code of a budget refusal (402), also the outcome the metrics count it by. */
export const BUDGET_EXCEEDED = 'budget_exceeded';

/** The settings an operator can change on a key (PATCH, create). */
export interface KeySettings {
	name: string;
	expiresAt: Date | null;
	blocked: boolean;
	/** null: every model. */
	models: CatalogModelId[] | null;
	/** null: the service's default limit. */
	rateLimitPerMinute: number | null;
	budget: KeyBudget | null;
}

export interface ManagedKey extends KeySettings {
	/** `key_…`: stable across rotations, so files, usage and idempotency keys stay with the key. */
	id: string;
	/** First characters of the current secret, to tell keys apart without revealing them. */
	prefix: string;
	/** Hex SHA-256 of the current secret. */
	secretHash: string;
	/** The secret replaced by the last rotation, accepted until `previousValidUntil`. */
	previousSecretHash: string | null;
	previousValidUntil: Date | null;
	createdAt: Date;
	revokedAt: Date | null;
}

const SECRET_PREFIX = 'igk_';
const PREFIX_LENGTH = 12;
export const KEY_ID = /^key_[A-Za-z0-9_-]{8,64}$/;

interface NewSecret {
	secret: string;
	hash: string;
	prefix: string;
}

/** 256 random bits, URL-safe: `igk_` + 43 characters. */
export function newSecret(): NewSecret {
	const secret = `${SECRET_PREFIX}${randomBytes(32).toString('base64url')}`;
	return { secret, hash: secretHash(secret), prefix: secret.slice(0, PREFIX_LENGTH) };
}

export function newKeyId(): string {
	return `key_${randomBytes(12).toString('base64url')}`;
}

function secretHash(secret: string): string {
	return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/** Start of the budget period that contains `now` (UTC); the epoch for `total`. */
export function periodStart(period: BudgetPeriod, now: Date): Date {
	if (period === 'day') return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
	if (period === 'month') return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
	return new Date(0);
}

/** When the budget period containing `now` ends; null for `total`, which never resets. */
export function periodEnd(period: BudgetPeriod, now: Date): Date | null {
	if (period === 'day') return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));
	if (period === 'month') return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
	return null;
}
