/** The answer of GET /v1/usage and GET /v1/admin/usage: rows per UTC day and model, and their total. */
import { z } from 'zod/v3';
import { roundUsd } from '../../../core/units';

const row = z.object({ date: z.string(), key_id: z.string().optional().describe('Only in the admin answer'), model: z.string(), images: z.number().int(), cost_usd: z.number() });
const total = z.object({ images: z.number().int(), cost_usd: z.number() });

export const usageResponseSchema = z
	.object({ object: z.literal('usage'), from: z.string().nullable(), to: z.string().nullable(), data: z.array(row), total })
	.describe('Images and cost');
export type UsageResponse = z.infer<typeof usageResponseSchema>;

export function usageAnswer(data: Array<z.infer<typeof row>>, from: string | undefined, to: string | undefined): UsageResponse {
	const sum = data.reduce((sum, each) => ({ images: sum.images + each.images, cost_usd: sum.cost_usd + each.cost_usd }), { images: 0, cost_usd: 0 });
	return { object: 'usage', from: from ?? null, to: to ?? null, data, total: { images: sum.images, cost_usd: roundUsd(sum.cost_usd) } };
}
