/**
 * Request schemas of the admin API (and of `imagegen-server keys`, which takes the same fields):
 * zod validates, `parseAdmin` turns the first problem into a 400 that names the field.
 */
import { z } from 'zod/v3';
import { invalidField, type ImageGenError } from '../../../core/errors';
import { CATALOG_MODEL_IDS, type CatalogModelId } from '../../../core/video-models';
import { formatPath } from '../../../core/schemas';
import { BUDGET_PERIODS, KEY_ID } from './managed-key';
import { hasUnsafeCharacter } from './unsafe-text';
import { isRealDateTime } from '../http/calendar';

const DATE = /^\d{4}-\d{2}-\d{2}$/;
/** An ISO 8601 instant with its time zone (Z or ±hh:mm): a bare local time would be ambiguous. */
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;
const MAX_BUDGET_USD = 1_000_000_000;

const name = z
	.string()
	.trim()
	.min(1, 'must not be empty')
	.max(100, 'must be at most 100 characters')
	.refine((text) => !hasUnsafeCharacter(text), 'must not contain control characters, line separators or bidi overrides');
const models = z
	.array(z.enum(CATALOG_MODEL_IDS as [CatalogModelId, ...CatalogModelId[]]))
	.min(1, 'must list at least one model (null allows every model)')
	.max(CATALOG_MODEL_IDS.length)
	.superRefine((ids, context) => {
		const repeated = ids.findIndex((id, index) => ids.indexOf(id) !== index);
		if (repeated !== -1) context.addIssue({ code: z.ZodIssueCode.custom, path: [repeated], message: `lists ${ids[repeated]} twice` });
	});
const rateLimit = z.number().int('must be a whole number').min(1, 'must be at least 1').max(1_000_000, 'must be at most 1000000');
const budgetUsd = z.number().positive('must be more than 0').max(MAX_BUDGET_USD, `must be at most ${MAX_BUDGET_USD}`);
const expiresAt = z
	.string()
	.regex(INSTANT, 'must be an ISO 8601 date-time with a time zone, e.g. 2030-01-31T00:00:00Z')
	.refine((text) => isRealDateTime(text) && !Number.isNaN(Date.parse(text)), 'is not a date-time that exists')
	.transform((text) => new Date(text))
	.refine((date) => date.getTime() > Date.now(), 'must be in the future');

/** A key's settings after its name, in create and update alike. */
const settings = {
	models: models.nullable().optional(),
	rate_limit_per_minute: rateLimit.nullable().optional(),
	budget_usd: budgetUsd.nullable().optional(),
	budget_period: z.enum(BUDGET_PERIODS).optional(),
	expires_at: expiresAt.nullable().optional(),
};

export const createKeySchema = z.object({ name, ...settings }).strict();
export type CreateKeyRequest = z.infer<typeof createKeySchema>;

/** Same fields as create plus `blocked`; absent leaves a setting as it is, null clears a limit. */
export const updateKeySchema = z.object({ name: name.optional(), ...settings, blocked: z.boolean().optional() }).strict();
export type UpdateKeyRequest = z.infer<typeof updateKeySchema>;

export const rotateKeySchema = z
	.object({
		grace_seconds: z.number().int('must be a whole number').min(0, 'must be at least 0').max(86_400, 'must be at most 86400').optional(),
	})
	.strict();

const date = z
	.string()
	.regex(DATE, 'must be a date as YYYY-MM-DD')
	.refine(isRealDateTime, 'is not a date that exists');

export const usageQuerySchema = z
	.object({
		from: date.optional(),
		to: date.optional(),
		key_id: z.string().regex(/^(key_[A-Za-z0-9_-]{8,64}|[0-9a-f]{16})$/, 'must be a key id (key_…, or the 16-hex id of a --api-keys key)').optional(),
	})
	.strict()
	.refine((query) => !(query.from && query.to && query.from > query.to), { message: "must not be after 'to'", path: ['from'] });

export const keyIdSchema = z.string().regex(KEY_ID, 'must be a key id such as key_AbC123…');

/** The value, or a 400 naming the first bad field (`where` prefixes nothing; kept for messages). */
export function parseAdmin<T extends z.ZodTypeAny>(schema: T, input: unknown, fallbackParam = 'body'): z.output<T> {
	const result = schema.safeParse(input ?? {});
	if (result.success) return result.data as z.output<T>;
	throw issueError(result.error.issues[0]!, fallbackParam);
}

function issueError(issue: z.ZodIssue, fallbackParam: string): ImageGenError {
	if (issue.code === z.ZodIssueCode.unrecognized_keys) {
		return invalidField(issue.keys[0] ?? fallbackParam, `Unknown field '${issue.keys[0]}'`, 'unknown_field');
	}
	const param = formatPath(issue.path) || fallbackParam;
	if (issue.code === z.ZodIssueCode.invalid_type) {
		if (issue.received === 'undefined') return invalidField(param, `'${param}' is required`, 'missing_field');
		if (param === fallbackParam) return invalidField(param, `The ${fallbackParam} must be a JSON object`, 'invalid_type');
		return invalidField(param, `'${param}' must be ${issue.expected === 'integer' ? 'a whole number' : `of type ${issue.expected}`}; got ${issue.received}`, 'invalid_type');
	}
	if (issue.code === z.ZodIssueCode.invalid_enum_value) {
		return invalidField(param, `'${param}' must be one of ${issue.options.join(', ')}; got ${JSON.stringify(issue.received)}`);
	}
	return invalidField(param, `'${param}' ${issue.message}`);
}
