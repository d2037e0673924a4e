/**
 * One input item through the Upload operation of the ImageGen Upload node. A binary or base64
 * file's kind is checked against `mediaType` from its own bytes before anything is sent, so a
 * mismatch never leaves a hosted file behind; behind a URL, the service decides from the bytes.
 */
import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { NodeApiError, NodeOperationError } from 'n8n-workflow';

import { sniffMedia, type MediaKind, type SniffedMedia } from '../../core/media';
import { readBinaryInput, readHead } from '../shared/binary-input';
import { idempotencyKey } from '../shared/idempotency';
import { toNodeError } from '../shared/items';
import { base64Parameter, urlParameter } from './source-parameters';
import { readRequestSettings } from '../shared/request-options';
import {
	IMAGE_ONLY_SETTINGS,
	uploadBinary,
	uploadReference,
	type HostedMedia,
	type ItemCall,
	type UploadFormat,
	type UploadSettings,
} from '../shared/uploads';
import { imageFitFrom } from './fit-for';
import { provenanceJson } from '../shared/provenance';

type InputType = 'binary' | 'url' | 'base64';
type MediaTypeParameter = 'auto' | MediaKind;

const INPUT_TYPES: readonly InputType[] = ['binary', 'url', 'base64'];

export async function uploadForItem(context: IExecuteFunctions, itemIndex: number): Promise<INodeExecutionData[]> {
	const inputType = context.getNodeParameter('inputType', itemIndex) as InputType;
	const mediaType = context.getNodeParameter('mediaType', itemIndex, 'auto') as MediaTypeParameter;
	if (!INPUT_TYPES.includes(inputType)) {
		throw new NodeOperationError(
			context.getNode(),
			`Parameter 'inputType' of item ${itemIndex}: unknown input type ${JSON.stringify(inputType)}; use one of ${INPUT_TYPES.join(', ')}`,
			{ itemIndex, description: 'The request was not sent: choose Binary File, URL or Base64 as the input type.' },
		);
	}
	const call: ItemCall = { context, itemIndex, settings: readRequestSettings(context, itemIndex) };
	const upload = { binary: uploadFromBinary, url: uploadFromUrl, base64: uploadFromBase64 }[inputType];
	const hosted = await upload(call, mediaType, readUploadSettings(context, itemIndex, mediaType));
	return [{ json: hostedFileJson(hosted) }];
}

/** The output item: imageUrl or videoUrl, url and mediaType, and what the service said of the file (expiresAt, id, …). */
function hostedFileJson(hosted: HostedMedia): IDataObject {
	return {
		[hosted.mediaType === 'video' ? 'videoUrl' : 'imageUrl']: hosted.url,
		url: hosted.url,
		mediaType: hosted.mediaType,
		...(hosted.expiresAt !== undefined ? { expiresAt: hosted.expiresAt } : {}),
		...(hosted.id !== undefined ? { id: hosted.id } : {}),
		...(hosted.mimeType !== undefined ? { mimeType: hosted.mimeType } : {}),
		...(hosted.sizeBytes !== undefined ? { sizeBytes: hosted.sizeBytes } : {}),
		...provenanceJson(hosted.provenance),
	};
}

function readUploadSettings(context: IExecuteFunctions, itemIndex: number, mediaType: MediaTypeParameter): UploadSettings {
	const options = context.getNodeParameter('options', itemIndex, {}) as IDataObject;
	const settings: UploadSettings = {};
	if (options.expiresIn !== undefined && options.expiresIn !== '') {
		// An expression may give the seconds as text; the service names a number it cannot take.
		settings.expiresIn = Number(options.expiresIn);
		if (!Number.isFinite(settings.expiresIn)) {
			throw new NodeOperationError(context.getNode(), `Parameter 'expiresIn' of item ${itemIndex}: the lifetime must be a number of seconds; got ${JSON.stringify(options.expiresIn)}`, {
				itemIndex,
			});
		}
	}
	if (mediaType === 'video') return settings;
	const format = context.getNodeParameter('outputFormat', itemIndex, 'original') as string;
	if (format !== 'original') settings.outputFormat = format as UploadFormat;
	return { ...settings, ...imageFitFrom(options) };
}

/** The settings for a file known to be `kind`: a video is hosted as given. */
function settingsFor(kind: MediaKind, settings: UploadSettings): UploadSettings {
	return kind === 'image' ? settings : withoutImageSettings(settings);
}

function withoutImageSettings(settings: UploadSettings): UploadSettings {
	const rest = { ...settings };
	for (const key of IMAGE_ONLY_SETTINGS) delete rest[key];
	return rest;
}

async function uploadFromBinary(call: ItemCall, mediaType: MediaTypeParameter, settings: UploadSettings): Promise<HostedMedia> {
	const { context, itemIndex } = call;
	const propertyName = context.getNodeParameter('binaryPropertyName', itemIndex) as string;
	const input = await readBinaryInput(context, itemIndex, propertyName);
	const media = sniffMedia(await readHead(input));
	const source = `the binary field '${propertyName}'`;
	const kind = checkKind(context, itemIndex, media, mediaType, source, input.mimeType);
	return await uploadBinary(call, input, settingsFor(kind, settings), keyFor(call, 'upload'));
}

async function uploadFromBase64(call: ItemCall, mediaType: MediaTypeParameter, settings: UploadSettings): Promise<HostedMedia> {
	const { context, itemIndex } = call;
	const { value, media } = base64Parameter(context, itemIndex);
	const kind = checkKind(context, itemIndex, media, mediaType, "the parameter 'base64'");
	return await uploadReference(call, kind, value, settingsFor(kind, settings), keyFor(call, 'upload'));
}

async function uploadFromUrl(call: ItemCall, mediaType: MediaTypeParameter, settings: UploadSettings): Promise<HostedMedia> {
	const { context, itemIndex } = call;
	const url = urlParameter(context, itemIndex);
	if (mediaType !== 'auto') return await uploadReference(call, mediaType, url, settingsFor(mediaType, settings), keyFor(call, 'upload'));
	// Only the service sees the bytes behind a URL: `file` lets it decide the kind from them, with one fetch.
	const first = await uploadReference(call, 'file', url, settings, keyFor(call, 'upload')).catch((error: unknown) => toNodeError(context, error, itemIndex));
	if (!(first instanceof Error)) return first;
	// The service applies image settings to images only and refuses them with a video, while this
	// node promises that videos are hosted as given: only then is the URL sent a second time.
	const imageOnly = withoutImageSettings(settings);
	if (Object.keys(imageOnly).length === Object.keys(settings).length || !isImageSettingRefused(first)) throw first;
	// Another body, so another key: the first one is bound to the refused request.
	return await uploadReference(call, 'file', url, imageOnly, keyFor(call, 'upload-as-given'));
}

/** One key per item, node run and execution: the node's retries of a 5xx then store the file once. */
function keyFor(call: ItemCall, purpose: string): { idempotencyKey: string } {
	return { idempotencyKey: idempotencyKey(call.context, call.itemIndex, purpose) };
}

const IMAGE_ONLY_FIELDS = new Set(['output_format', 'max_side', 'max_bytes']);

function isImageSettingRefused(error: unknown): boolean {
	if (!(error instanceof NodeApiError)) return false;
	const response = error.errorResponse as { error?: { param?: string; code?: string } } | undefined;
	return IMAGE_ONLY_FIELDS.has(response?.error?.param ?? '') && response?.error?.code === 'field_not_supported';
}

/** The file's kind, or a NodeOperationError when it is not a supported medium or not the one asked for. */
function checkKind(
	context: IExecuteFunctions,
	itemIndex: number,
	media: SniffedMedia | null,
	mediaType: MediaTypeParameter,
	source: string,
	declaredMimeType?: string,
): MediaKind {
	if (!media) {
		throw new NodeOperationError(
			context.getNode(),
			`Item ${itemIndex}: ${source} holds neither a supported image (png, jpeg, webp, gif, avif) nor a supported video (mp4, mov, webm)${declaredMimeType ? `; it is declared as ${declaredMimeType}` : ''}`,
			{ itemIndex },
		);
	}
	if (mediaType !== 'auto' && media.kind !== mediaType) {
		throw new NodeOperationError(
			context.getNode(),
			`Parameter 'mediaType' of item ${itemIndex}: expected ${mediaType === 'image' ? 'an image' : 'a video'}, but ${source} holds ${media.mimeType}`,
			{ itemIndex, description: "Set 'Media Type' to Auto-Detect or pass the right file." },
		);
	}
	return media.kind;
}
