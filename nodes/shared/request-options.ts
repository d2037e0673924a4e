/** Options both nodes share: how many items run at once, the time limit and retrying. */
import type { IExecuteFunctions, INodeProperties } from 'n8n-workflow';

import { DEFAULT_RETRY_POLICY } from '../../core/retry-policy';
import type { RequestSettings } from './uploads';

const DEFAULT_CONCURRENCY = 5;

export const requestOptionProperties: INodeProperties[] = [
	{
		displayName: 'Concurrency',
		name: 'concurrency',
		type: 'number',
		typeOptions: { minValue: 1, maxValue: 50 },
		default: 5,
		description: 'How many items are sent at the same time; output stays in input order',
	},
	{
		displayName: 'Max Retries',
		name: 'maxRetries',
		type: 'number',
		typeOptions: { minValue: 0, maxValue: 10 },
		default: 3,
		description: 'How often a request refused with 429 or a 5xx is repeated, waiting as the service asks (Retry-After) or with growing pauses',
	},
	{
		displayName: 'Timeout (Seconds)',
		name: 'timeout',
		type: 'number',
		typeOptions: { minValue: 1 },
		default: 300,
		description: 'How long one request may take before it fails',
	},
];

interface RequestOptionValues {
	concurrency?: number;
	maxRetries?: number;
	timeout?: number;
}

export function readConcurrency(context: IExecuteFunctions): number {
	const options = context.getNodeParameter('options', 0, {}) as RequestOptionValues;
	return Math.max(1, Math.floor(options.concurrency ?? DEFAULT_CONCURRENCY));
}

export function readRequestSettings(context: IExecuteFunctions, itemIndex: number): RequestSettings {
	const options = context.getNodeParameter('options', itemIndex, {}) as RequestOptionValues;
	return {
		timeoutMs: Math.max(1, options.timeout ?? 300) * 1000,
		retry: { ...DEFAULT_RETRY_POLICY, maxRetries: Math.max(0, Math.floor(options.maxRetries ?? DEFAULT_RETRY_POLICY.maxRetries)) },
	};
}
