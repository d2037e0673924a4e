/**
 * A video request's inputs and the frame it settles on. The first frame, the last frame and the
 * audio track are loaded once each (a URL fetched through the address-checked fetcher, a data URI
 * or base64 decoded) and kept for the host and the manifest. With a first frame the video follows
 * the image's shape: the catalog ratio nearest to it, at the asked resolution.
 */
import { invalidField } from '../../../core/errors';
import { nearestAspectRatio } from '../../../core/models';
import { VIDEO_MODELS, videoDimensions } from '../../../core/video-models';
import type { VideoRequest } from '../../../core/video-schemas';
import { loadInputBytes, loadInputImage, type InputImageSource } from '../generation/input-images';
import { declaredSize } from '../media/image-header';
import type { SettledVideoRequest, VideoInputField } from './video-provider';

export type VideoInputLoader = (field: VideoInputField) => Promise<Buffer>;

export const VIDEO_INPUT_FIELDS: readonly VideoInputField[] = ['image', 'last_frame_image', 'audio'];

/** Loads each input of `request` at most once, for the host and the manifest alike. */
export function videoInputLoader(request: VideoRequest, source: InputImageSource, signal: AbortSignal): VideoInputLoader {
	const loaded = new Map<VideoInputField, Promise<Buffer>>();
	return (field) => {
		const value = request[field];
		if (value === undefined) return Promise.reject(invalidField(field, `'${field}' was not given`));
		let bytes = loaded.get(field);
		if (!bytes) {
			bytes = field === 'audio' ? loadInputBytes(value, field, source, signal) : loadInputImage(value, field, source, signal);
			loaded.set(field, bytes);
		}
		return bytes;
	};
}

/** The request with its seed and frame settled: a first frame decides the ratio. */
export async function settleVideo(request: VideoRequest & { seed: number }, load: VideoInputLoader): Promise<SettledVideoRequest> {
	let aspectRatio = request.aspect_ratio;
	if (request.image !== undefined) {
		const size = declaredSize(await load('image'));
		if (size) aspectRatio = nearestAspectRatio(size.width, size.height, VIDEO_MODELS[request.model].aspectRatios);
	}
	return { ...request, aspect_ratio: aspectRatio, ...videoDimensions(aspectRatio, request.resolution) };
}

/** The frame as asked, without looking at a first frame (a resumed job, whose host has it). */
export function settledAsAsked(request: VideoRequest & { seed: number }): SettledVideoRequest {
	return { ...request, ...videoDimensions(request.aspect_ratio, request.resolution) };
}
