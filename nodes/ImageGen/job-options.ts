/**
 * The Generate operation's options for generations as jobs: whether the node waits for the image
 * or hands on the submitted generation, how long it waits, and where the service reports the end.
 */
import type { IExecuteFunctions, INodeProperties } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

const DEFAULT_MAX_WAIT_SECONDS = 1800;
// The service's own limit for `webhook_url`.
const MAX_WEBHOOK_URL_LENGTH = 2048;

export const jobOptionProperties: INodeProperties[] = [
	{
		displayName: 'Wait for Result',
		name: 'waitForResult',
		type: 'options',
		options: [
			{
				name: 'Submit',
				value: 'submit',
				description: 'Output the generation (for p-video the video) object at once, with its ID and status; get the image or video later with Get Generation or at the Webhook URL',
			},
			{
				name: 'Wait',
				value: 'wait',
				description: 'Submit the generation as a job and poll it until it ends, so no HTTP time-out cuts it short; output the image or video',
			},
		],
		default: 'wait',
		description: 'Whether the node waits for the image or outputs the submitted generation at once',
	},
	{
		displayName: 'Max Wait (Seconds)',
		name: 'maxWaitSeconds',
		type: 'number',
		typeOptions: { minValue: 1 },
		default: 1800,
		description: 'How long the node waits for a generation; after that it is canceled and the item fails',
		displayOptions: { hide: { waitForResult: ['submit'] } },
	},
	{
		displayName: 'Webhook URL',
		name: 'webhookUrl',
		type: 'string',
		default: '',
		placeholder: 'https://example.com/webhook',
		description:
			'The service POSTs the generation object here when it ends (signed as Standard Webhooks); with Submit, e.g. {{ $execution.resumeUrl }} and a Wait node "On Webhook Call" after this one',
	},
];

export interface JobOptionValues {
	waitForResult?: unknown;
	maxWaitSeconds?: unknown;
	webhookUrl?: unknown;
}

export interface JobOptions {
	waitForResult: 'wait' | 'submit';
	maxWaitSeconds: number;
	webhookUrl?: string;
}

/** The options checked as the service would, each failure naming its parameter; nothing is sent before. */
export function readJobOptions(context: IExecuteFunctions, itemIndex: number, values: JobOptionValues): JobOptions {
	const fail = (parameter: string, reason: string) =>
		new NodeOperationError(context.getNode(), `Parameter '${parameter}' of item ${itemIndex}: ${reason}`, {
			itemIndex,
			description: 'The request was not sent: fix the parameter and run the node again.',
		});
	const { waitForResult = 'wait', maxWaitSeconds = DEFAULT_MAX_WAIT_SECONDS } = values;
	if (waitForResult !== 'wait' && waitForResult !== 'submit') throw fail('waitForResult', `${JSON.stringify(waitForResult)} is not one of wait, submit`);
	if (typeof maxWaitSeconds !== 'number' || !Number.isFinite(maxWaitSeconds) || maxWaitSeconds < 1) {
		throw fail('maxWaitSeconds', `${JSON.stringify(maxWaitSeconds)} is not a number of seconds of at least 1`);
	}
	const webhookUrl = readWebhookUrl(values.webhookUrl, (reason) => fail('webhookUrl', reason));
	return { waitForResult, maxWaitSeconds, ...(webhookUrl ? { webhookUrl } : {}) };
}

/** The Webhook URL as the service takes it (http or https, at most 2,048 characters), or nothing when empty. */
function readWebhookUrl(value: unknown, fail: (reason: string) => NodeOperationError): string | undefined {
	if (value === undefined || (typeof value === 'string' && value.trim() === '')) return undefined;
	if (typeof value !== 'string') throw fail(`${JSON.stringify(value)} is not a URL`);
	const text = value.trim();
	if (text.length > MAX_WEBHOOK_URL_LENGTH) throw fail(`the URL has ${text.length} characters; at most ${MAX_WEBHOOK_URL_LENGTH} are allowed`);
	let url: URL;
	try {
		url = new URL(text);
	} catch {
		throw fail(`${JSON.stringify(text)} is not a valid URL`);
	}
	if (url.protocol !== 'http:' && url.protocol !== 'https:') throw fail(`${JSON.stringify(text)} is not an http or https URL`);
	return text;
}
