/** Hosting a file through `POST /uploads`, from a binary property (streamed) or a JSON reference. */
import type { IExecuteFunctions } from 'n8n-workflow';

import { readUploadAnswer } from './answers';
import type { Provenance } from '../../core/api';
import type { BinaryInput } from './binary-input';
import { StreamedMultipartBody } from './multipart';
import type { RetryPolicy } from '../../core/retry-policy';
import { callApi, type ApiCall } from './transport';

export interface RequestSettings {
	timeoutMs: number;
	retry: RetryPolicy;
}

/** A hosted file as the service described it; another OpenAI-compatible service may give only the URL. */
export interface HostedMedia {
	mediaType: 'image' | 'video';
	url: string;
	expiresAt?: string;
	id?: string;
	mimeType?: string;
	sizeBytes?: number;
	provenance?: Provenance;
}

export type UploadFormat = 'webp' | 'png' | 'jpg';

/** How the service stores an upload; every field is optional and sent only when set. */
export interface UploadSettings {
	outputFormat?: UploadFormat;
	/** Seconds the file stays online. */
	expiresIn?: number;
	maxSide?: number;
	maxBytes?: number;
}

/** The fields that apply to images only: the service refuses them with a video. */
export const IMAGE_ONLY_SETTINGS = ['outputFormat', 'maxSide', 'maxBytes'] as const;

/** Where an API call comes from: the node run, the item it is for, and that item's settings. */
export interface ItemCall {
	context: IExecuteFunctions;
	itemIndex: number;
	settings: RequestSettings;
}

/** Headers for one upload, e.g. an `Idempotency-Key`. */
interface UploadRequestOptions {
	idempotencyKey?: string;
}

function apiFields(settings: UploadSettings): Record<string, string | number> {
	const fields: Record<string, string | number | undefined> = {
		output_format: settings.outputFormat,
		expires_in: settings.expiresIn,
		max_side: settings.maxSide,
		max_bytes: settings.maxBytes,
	};
	return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as Record<string, string | number>;
}

/** The upload node's parameter behind each upload field, so a refusal names what the user can change. */
const UPLOAD_PARAMETER_NAMES: Readonly<Record<string, string>> = {
	expires_in: 'expiresIn',
	max_side: 'maxSide',
	max_bytes: 'maxSizeMb',
};

async function postUpload(call: ItemCall, body: ApiCall['body'], options: UploadRequestOptions): Promise<HostedMedia> {
	const headers = options.idempotencyKey ? { 'Idempotency-Key': options.idempotencyKey } : undefined;
	const response = await callApi<unknown>(call.context, { method: 'POST', path: '/uploads', body, headers, itemIndex: call.itemIndex, parameterNames: UPLOAD_PARAMETER_NAMES, ...call.settings });
	return readUploadAnswer(call.context, call.itemIndex, response);
}

/**
 * Streams a binary property as multipart: the file part is read from n8n's store as it is sent.
 * With an idempotency key the boundary comes from the key, so a repeat sends the very same bytes.
 */
export async function uploadBinary(call: ItemCall, input: BinaryInput, settings: UploadSettings, options: UploadRequestOptions = {}): Promise<HostedMedia> {
	const fields = Object.entries(apiFields(settings)).map(([field, value]) => ({ field, value: String(value) }));
	return await postUpload(
		call,
		async () =>
			new StreamedMultipartBody(
				{ field: 'file', fileName: input.fileName, contentType: input.mimeType, size: input.size, content: await input.open() },
				fields,
				options.idempotencyKey ? `----imagegen-${options.idempotencyKey.slice(0, 40)}` : undefined,
			),
		options,
	);
}

/** A URL the service fetches, or base64 / a data URI, sent as JSON; with `file` the bytes decide the kind. */
export async function uploadReference(
	call: ItemCall,
	field: 'file' | 'image' | 'video',
	value: string,
	settings: UploadSettings,
	options: UploadRequestOptions = {},
): Promise<HostedMedia> {
	return await postUpload(call, () => ({ [field]: value, ...apiFields(settings) }), options);
}
