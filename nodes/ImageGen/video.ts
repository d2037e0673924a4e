/**
 * One input item through the Generate operation with a video model (p-video), in one straight
 * path: resolve the frames (uploading binaries too large to inline) → build the request → check it
 * as the service would → create the video → wait for it (Wait for Result "Wait") and stream the MP4
 * into the item, or hand the Video object on ("Submit").
 */
import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import { ImageGenError } from '../../core/errors';
import { parseVideoRequest, type VideoRequest } from '../../core/video-schemas';
import { idempotencyKey } from '../shared/idempotency';
import { toNodeError } from '../shared/items';
import { readRequestSettings } from '../shared/request-options';
import { serviceTypeOf } from '../shared/service-type';
import { runsAsTool } from '../shared/tool-mode';
import type { ItemCall } from '../shared/uploads';
import { deleteUploads, resolveImage, type ResolvedImage } from './image-inputs';
import type { ImageOutputOptions } from './image-output';
import { readJobOptions, type JobOptionValues } from './job-options';
import { VIDEO_FIELD_PARAMETERS, type FrameSource } from './video-description';
import { submitVideo, videoFailure, waitForVideo } from './video-jobs';
import { toVideoItems, videoJson } from './video-output';

interface VideoOptions extends ImageOutputOptions, JobOptionValues {
	inlineLimitMb?: number;
	seed?: number;
}

const MEGABYTE = 1024 * 1024;

/** The frames as the request carries them; absent when their source is None. */
interface Frames {
	firstFrame?: ResolvedImage;
	lastFrame?: ResolvedImage;
}

export async function generateVideoForItem(context: IExecuteFunctions, itemIndex: number): Promise<INodeExecutionData[]> {
	if ((await serviceTypeOf(context, itemIndex)) === 'openai') throw notOnOpenAi(context, itemIndex);
	const asTool = runsAsTool(context);
	// As a tool the model needs a URL it can pass on, and the agent would drop a download anyway.
	const options = { ...(context.getNodeParameter('options', itemIndex, {}) as VideoOptions), ...(asTool ? { download: false } : {}) };
	const call: ItemCall = { context, itemIndex, settings: readRequestSettings(context, itemIndex) };
	const jobOptions = readJobOptions(context, itemIndex, options);

	const frames: Frames = {};
	let request: VideoRequest;
	try {
		const inlineLimitBytes = (options.inlineLimitMb ?? 4) * MEGABYTE;
		frames.firstFrame = await resolveFrame(call, 'firstFrame', inlineLimitBytes);
		frames.lastFrame = await resolveFrame(call, 'lastFrame', inlineLimitBytes);
		request = checkedRequest(context, itemIndex, videoBody(context, itemIndex, options, frames));
	} catch (error) {
		// A request that is never sent leaves nothing hosted behind.
		await deleteUploads(call, Object.values(frames).filter((frame) => frame?.uploadedId) as ResolvedImage[]);
		throw toNodeError(context, error, itemIndex);
	}

	const body: IDataObject = { ...request, ...(jobOptions.webhookUrl ? { webhook_url: jobOptions.webhookUrl } : {}) };
	const submitted = await submitVideo(call, body, { 'Idempotency-Key': idempotencyKey(context, itemIndex, 'video') }, VIDEO_FIELD_PARAMETERS);
	if (jobOptions.waitForResult === 'submit') return [{ json: submitted.video.body }];
	const video = await waitForVideo(call, submitted, jobOptions.maxWaitSeconds);
	if (video.status !== 'completed') throw videoFailure(call, video, VIDEO_FIELD_PARAMETERS);
	if (asTool) return [{ json: videoJson(video) }];
	return await toVideoItems(context, itemIndex, video, options, call.settings);
}

/** The request body from the node's parameters, before the checks. */
function videoBody(context: IExecuteFunctions, itemIndex: number, options: VideoOptions, frames: Frames): Record<string, unknown> {
	const parameter = (name: string, fallback: unknown = '') => context.getNodeParameter(name, itemIndex, fallback);
	const audio = String(parameter('audioUrl')).trim();
	return {
		model: parameter('model'),
		prompt: parameter('prompt'),
		seconds: parameter('duration', 5),
		aspect_ratio: parameter('aspectRatio', '16:9'),
		resolution: parameter('resolution', '720p'),
		fps: parameter('fps', 24),
		draft: parameter('draft', false),
		prompt_upsampling: parameter('promptUpsampling', true),
		save_audio: parameter('saveAudio', true),
		...(options.seed !== undefined ? { seed: options.seed } : {}),
		...(frames.firstFrame ? { image: frames.firstFrame.value } : {}),
		...(frames.lastFrame ? { last_frame_image: frames.lastFrame.value } : {}),
		...(audio ? { audio } : {}),
	};
}

/** A frame the parameters ask for, as the request carries it; nothing when its source is None. */
async function resolveFrame(call: ItemCall, name: 'firstFrame' | 'lastFrame', inlineLimitBytes: number): Promise<ResolvedImage | undefined> {
	const parameter = (suffix: string, fallback: unknown) => call.context.getNodeParameter(`${name}${suffix}`, call.itemIndex, fallback);
	const source = parameter('', 'none') as FrameSource;
	if (source === 'none') return undefined;
	const slot = { label: `'${name}'`, purpose: name === 'firstFrame' ? 'first-frame' : 'last-frame' };
	if (source === 'url') return { value: String(parameter('Url', '')).trim() };
	return await resolveImage(call, { source: 'binary', binaryPropertyName: String(parameter('BinaryPropertyName', 'data')) }, slot, inlineLimitBytes);
}

/** The request checked as the service checks it; a refusal names the node parameter and nothing is sent. */
function checkedRequest(context: IExecuteFunctions, itemIndex: number, body: Record<string, unknown>): VideoRequest {
	try {
		return parseVideoRequest(body);
	} catch (error) {
		if (!(error instanceof ImageGenError)) throw toNodeError(context, error, itemIndex);
		const field = error.param?.replace(/[.[].*$/, '') ?? '';
		const parameter = Object.hasOwn(VIDEO_FIELD_PARAMETERS, field) ? VIDEO_FIELD_PARAMETERS[field] : error.param;
		return invalid(context, itemIndex, parameter ?? undefined, error.message);
	}
}

function invalid(context: IExecuteFunctions, itemIndex: number, parameter: string | undefined, message: string): never {
	throw new NodeOperationError(context.getNode(), `${parameter ? `Parameter '${parameter}'` : 'Parameters'} of item ${itemIndex}: ${message}`, {
		itemIndex,
		description: 'The request was not sent: fix the parameter and run the node again.',
	});
}

function notOnOpenAi(context: IExecuteFunctions, itemIndex: number): NodeOperationError {
	return new NodeOperationError(context.getNode(), 'p-video needs an ImageGen service: an OpenAI-compatible images API makes no videos', {
		itemIndex,
		description: "The ImageGen API credential's Service Type is OpenAI-Compatible. Use a credential whose Service Type is ImageGen (an imagegen-server) for videos.",
	});
}
