/** The answer of GET /v1/usage and GET /v1/admin/usage: rows per UTC day and model, and their total. */
import { z } from 'zod/v3';
import { roundUsd } from '../../../core/units';

// Seconds appear only where video was made, so an answer about images alone reads as it always did.
const seconds = z.number().int().optional().describe('Whole seconds of video made; present only when not 0');
const row = z.object({ date: z.string(), key_id: z.string().optional().describe('Only in the admin answer'), model: z.string(), images: z.number().int(), seconds, cost_usd: z.number() });
const total = z.object({ images: z.number().int(), seconds, cost_usd: z.number() });

export const usageResponseSchema = z
	.object({ object: z.literal('usage'), from: z.string().nullable(), to: z.string().nullable(), data: z.array(row), total })
	.describe('Images, seconds of video and cost');
export type UsageResponse = z.infer<typeof usageResponseSchema>;

/** A row as the ledger reads it (seconds always there, 0 for images), with its key in the admin answer. */
export interface UsageAnswerRow {
	date: string;
	key_id?: string;
	model: string;
	images: number;
	seconds: number;
	cost_usd: number;
}

export function usageAnswer(rows: readonly UsageAnswerRow[], from: string | undefined, to: string | undefined): UsageResponse {
	const sum = rows.reduce((sum, each) => ({ images: sum.images + each.images, seconds: sum.seconds + each.seconds, cost_usd: sum.cost_usd + each.cost_usd }), { images: 0, seconds: 0, cost_usd: 0 });
	const data = rows.map(({ date, key_id, model, images, seconds, cost_usd }) => ({ date, ...(key_id === undefined ? {} : { key_id }), model, images, ...secondsIfAny(seconds), cost_usd }));
	return { object: 'usage', from: from ?? null, to: to ?? null, data, total: { images: sum.images, ...secondsIfAny(sum.seconds), cost_usd: roundUsd(sum.cost_usd) } };
}

function secondsIfAny(seconds: number): { seconds?: number } {
	return seconds === 0 ? {} : { seconds };
}
