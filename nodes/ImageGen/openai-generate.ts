/**
 * The Generate operation against a plain OpenAI-compatible images API (credential Service Type
 * "OpenAI-Compatible"): the model id comes from the option Model ID (OpenAI-Compatible); the node's
 * Model only chooses between a generation (`POST /images/generations`, JSON) and an edit of the
 * input images (p-image-edit: `POST /images/edits`, multipart). Only the fields that API takes are
 * sent (core/openai-images.ts): no seed, negative prompt, style, webhook or job — the answer is the
 * image, read as any other answer into json and binary.
 */
import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import { IMAGE_OUTPUT_FORMATS, MATCH_INPUT_IMAGE, MAX_INPUT_IMAGES, MODELS, RESPONSE_FORMATS, aspectRatioChoices, isModelId, type AspectRatio } from '../../core/models';
import { parseMediaInput, sniffMedia, SNIFF_BYTES } from '../../core/media';
import { DEFAULT_OPENAI_MODEL, isGptImageModel, openAiEditImageField, openAiImageFields } from '../../core/openai-images';
import { readGenerationAnswer } from '../shared/answers';
import { readBinaryInput } from '../shared/binary-input';
import { StreamedMultipartBody, type ByteSource, type MultipartFile } from '../shared/multipart';
import { readRequestSettings } from '../shared/request-options';
import { runsAsTool } from '../shared/tool-mode';
import { callApi } from '../shared/transport';
import type { ItemCall } from '../shared/uploads';
import type { ImageSourceParameter } from './image-inputs';
import { toOutputItems, toolItems, type ImageOutputOptions } from './image-output';

interface OpenAiOptions extends ImageOutputOptions {
	openAiModel?: unknown;
}

/** The node parameter behind each field OpenAI may name in a refusal. */
const OPENAI_PARAMETER_NAMES: Readonly<Record<string, string>> = {
	model: 'openAiModel',
	size: 'aspectRatio',
	response_format: 'responseFormat',
	output_format: 'outputFormat',
	image: 'images',
	'image[]': 'images',
};

/** An input image of an edit: opened afresh for every attempt, so a streamed binary can be sent again. */
interface EditImage {
	fileName: string;
	contentType: string;
	size: number;
	open(): Promise<ByteSource>;
}

export async function generateWithOpenAi(context: IExecuteFunctions, itemIndex: number): Promise<INodeExecutionData[]> {
	const parameter = (name: string, fallback: unknown = '') => context.getNodeParameter(name, itemIndex, fallback);
	const fail = (name: string, reason: string) =>
		new NodeOperationError(context.getNode(), `Parameter '${name}' of item ${itemIndex}: ${reason}`, {
			itemIndex,
			description: 'The request was not sent: fix the parameter and run the node again.',
		});
	const asTool = runsAsTool(context);
	const options = parameter('options', {}) as OpenAiOptions;
	const call: ItemCall = { context, itemIndex, settings: readRequestSettings(context, itemIndex) };

	const kind = parameter('model');
	if (!isModelId(kind)) throw fail('model', `${JSON.stringify(kind)} is not one of ${Object.keys(MODELS).join(', ')}`);
	const model = typeof options.openAiModel === 'string' && options.openAiModel.trim() !== '' ? options.openAiModel.trim() : DEFAULT_OPENAI_MODEL;
	if (options.openAiModel !== undefined && typeof options.openAiModel !== 'string') throw fail('openAiModel', `${JSON.stringify(options.openAiModel)} is not a model id`);
	const prompt = String(parameter('prompt')).trim();
	if (!prompt) throw fail('prompt', "'prompt' is empty: say what the image should show");
	const aspectRatio = String(parameter('aspectRatio', MODELS[kind].fields.includes('images') ? MATCH_INPUT_IMAGE : '1:1'));
	const ratios: readonly string[] = aspectRatioChoices(MODELS[kind]);
	if (!ratios.includes(aspectRatio)) throw fail('aspectRatio', `${JSON.stringify(aspectRatio)} is not one of ${ratios.join(', ')}`);
	const outputFormat = String(parameter('outputFormat', 'png'));
	if (!(IMAGE_OUTPUT_FORMATS as readonly string[]).includes(outputFormat)) throw fail('outputFormat', `${JSON.stringify(outputFormat)} is not one of ${IMAGE_OUTPUT_FORMATS.join(', ')}`);
	const responseFormat = asTool ? 'url' : String(parameter('responseFormat', 'url'));
	if (!(RESPONSE_FORMATS as readonly string[]).includes(responseFormat)) throw fail('responseFormat', `${JSON.stringify(responseFormat)} is not one of ${RESPONSE_FORMATS.join(', ')}`);

	const fields = openAiImageFields({
		model,
		prompt,
		...(aspectRatio === MATCH_INPUT_IMAGE ? {} : { aspectRatio: aspectRatio as AspectRatio }),
		outputFormat,
		responseFormat: responseFormat as 'url' | 'b64_json',
	});
	const request = { method: 'POST' as const, itemIndex, parameterNames: OPENAI_PARAMETER_NAMES, onlyRateLimitsRetried: true, ...call.settings };
	let response: unknown;
	if (MODELS[kind].fields.includes('images')) {
		const sources = (parameter('images', {}) as { image?: ImageSourceParameter[] }).image ?? [];
		if (sources.length === 0 || sources.length > MAX_INPUT_IMAGES) throw fail('images', `give 1 to ${MAX_INPUT_IMAGES} input images; got ${sources.length}`);
		const images = await Promise.all(sources.map(async (source, position) => await editImage(call, source, position)));
		const imageField = openAiEditImageField(model);
		const textFields = Object.entries(fields).map(([field, value]) => ({ field, value: String(value) }));
		response = await callApi<unknown>(context, {
			...request,
			path: '/images/edits',
			body: async () => {
				const files: MultipartFile[] = [];
				for (const image of images) files.push({ field: imageField, fileName: image.fileName, contentType: image.contentType, size: image.size, content: await image.open() });
				return new StreamedMultipartBody(files, textFields);
			},
		});
	} else {
		response = await callApi<unknown>(context, { ...request, path: '/images/generations', body: () => ({ ...fields }) });
	}
	const answer = readGenerationAnswer(context, itemIndex, response);
	// Only gpt-image models are told a format; another model's images are named from their bytes.
	const subject = { model, prompt, ...(isGptImageModel(model) ? { outputFormat: outputFormat as 'png' | 'jpeg' | 'webp' } : {}) };
	if (asTool) {
		// An agent passes on only JSON; an OpenAI-compatible API hosts nothing the node could link to.
		if (answer.images.some((image) => !('url' in image))) {
			throw new NodeOperationError(context.getNode(), `${model} answered the image inline (b64_json), but as a tool the node hands the agent a URL`, {
				itemIndex,
				description: "An OpenAI-compatible API hosts no files. Ask for a model that answers a URL (dall-e-2, dall-e-3) in 'Model ID (OpenAI-Compatible)', or use an ImageGen service, which hosts every image.",
			});
		}
		return toolItems(subject, answer);
	}
	return await toOutputItems(context, itemIndex, subject, answer, options, call.settings);
}

/**
 * An input image as a multipart file: a binary property streamed from n8n's store; a URL fetched
 * by the node (the API takes only files); base64 or a data URI decoded. Every one must be an image.
 */
async function editImage(call: ItemCall, source: ImageSourceParameter, position: number): Promise<EditImage> {
	const { context, itemIndex } = call;
	const notAnImage = (what: string) =>
		new NodeOperationError(context.getNode(), `Parameter 'images' (image ${position + 1}) of item ${itemIndex}: ${what} is not an image`, { itemIndex });
	if (source.source !== 'url' && source.source !== 'base64') {
		const input = await readBinaryInput(context, itemIndex, source.binaryPropertyName || 'data');
		if (!input.mimeType.startsWith('image/')) throw notAnImage(`the binary field '${input.propertyName}' (${input.mimeType})`);
		return { fileName: input.fileName, contentType: input.mimeType, size: input.size, open: async () => await input.open() };
	}
	const field = `images[${position}]`;
	const parsed = parseMediaInput(source.source === 'url' ? (source.url ?? '') : (source.base64 ?? ''), field);
	const bytes = parsed.kind === 'bytes' ? parsed.bytes : await fetchImage(call, parsed.url, field);
	const media = sniffMedia(bytes.subarray(0, SNIFF_BYTES));
	if (media?.kind !== 'image') throw notAnImage(parsed.kind === 'url' ? `what ${parsed.url.href} answered` : `the ${source.source} data`);
	return { fileName: `image-${position + 1}.${media.extension}`, contentType: media.mimeType, size: bytes.byteLength, open: async () => bytes };
}

async function fetchImage(call: ItemCall, url: URL, field: string): Promise<Buffer> {
	try {
		const body = (await call.context.helpers.httpRequest({ method: 'GET', url: url.href, encoding: 'arraybuffer', timeout: call.settings.timeoutMs })) as ArrayBuffer | Buffer;
		return Buffer.isBuffer(body) ? body : Buffer.from(body);
	} catch (error) {
		throw new NodeOperationError(call.context.getNode(), `Parameter 'images' of item ${call.itemIndex}: fetching '${field}' from ${url.href} failed: ${(error as Error).message}`, {
			itemIndex: call.itemIndex,
		});
	}
}
