/**
 * What the three p-video hosts share: p-video's input fields as Pruna publishes them (the same
 * names on Replicate's prunaai/p-video and in this API's own videos route), and the request's
 * media inputs loaded by us first (SSRF-checked, bounded) so a host never has to reach a URL we
 * were given: a loopback or private address is reachable from here, not from the host.
 */
import { FormData } from 'undici';
import { ImageGenError } from '../../../../core/errors';
import { sniffMedia } from '../../../../core/media';
import type { FilesApi } from '../../generation/providers/inputs';
import { providerJson } from '../../generation/providers/provider-http';
import type { SettledVideoRequest, VideoContext, VideoInputField } from '../video-provider';

export const VIDEO_INPUT_FIELDS: readonly VideoInputField[] = ['image', 'last_frame_image', 'audio'];

export interface LoadedInput {
	field: VideoInputField;
	bytes: Buffer;
	mimeType: string;
}

/**
 * p-video's own fields, as its input schema names them. `duration` is sent with audio too: the
 * host then follows the audio's length and ignores it.
 */
export function pVideoFields(request: SettledVideoRequest): Record<string, unknown> {
	return {
		prompt: request.prompt,
		duration: request.seconds,
		resolution: request.resolution,
		fps: request.fps,
		aspect_ratio: request.aspect_ratio,
		draft: request.draft,
		seed: request.seed,
		prompt_upsampling: request.prompt_upsampling,
		save_audio: request.save_audio,
	};
}

/** The media inputs the request has, loaded, in the order of VIDEO_INPUT_FIELDS. */
export async function loadVideoInputs(request: SettledVideoRequest, context: VideoContext): Promise<LoadedInput[]> {
	const fields = VIDEO_INPUT_FIELDS.filter((field) => request[field] !== undefined);
	return await Promise.all(
		fields.map(async (field) => {
			const bytes = await context.loadInput(field);
			return { field, bytes, mimeType: inputMimeType(bytes) };
		}),
	);
}

/**
 * The type of an input by its first bytes: the image types core/media.ts knows, and the audio
 * formats p-video takes (flac, mp3, wav), so a host reads a data URI or an upload as what it is.
 */
export function inputMimeType(bytes: Buffer): string {
	const sniffed = sniffMedia(bytes);
	if (sniffed) return sniffed.mimeType;
	if (bytes.subarray(0, 4).toString('latin1') === 'fLaC') return 'audio/flac';
	if (bytes.subarray(0, 4).toString('latin1') === 'RIFF' && bytes.subarray(8, 12).toString('latin1') === 'WAVE') return 'audio/wav';
	// An ID3 tag, or an MPEG audio frame's sync word.
	if (bytes.subarray(0, 3).toString('latin1') === 'ID3' || (bytes[0] === 0xff && ((bytes[1] ?? 0) & 0xe0) === 0xe0)) return 'audio/mpeg';
	return 'application/octet-stream';
}

/**
 * Uploads one input to a host's files API (Pruna's and Replicate's POST /v1/files: multipart with
 * the file in part `content`); answers the URL the model reads it from (`urls.get`, Pruna: or
 * `url`). An upload makes nothing billable: it is retried like a poll, and its refusal proves no
 * job was made.
 */
export async function uploadVideoInput(input: LoadedInput, api: FilesApi): Promise<string> {
	const form = new FormData();
	const extension = input.mimeType.split('/')[1]?.replace('mpeg', 'mp3') ?? 'bin';
	form.append('content', new Blob([input.bytes], { type: input.mimeType }), `${input.field}.${extension}`);
	const file = await providerJson<{ url?: unknown; urls?: { get?: unknown } }>({ provider: api.provider, method: 'POST', url: api.url, credentials: api.credentials, form, signal: api.signal, deadline: api.deadline, retry: api.retry, prepares: true });
	const url = file.urls?.get ?? file.url;
	if (typeof url !== 'string' || !url) {
		throw new ImageGenError(502, `The ${api.provider} provider accepted the ${input.field} input but returned no URL for it`, { code: 'upstream_invalid_output', param: input.field });
	}
	return url;
}

/** A host's answer that is not the shape it publishes. */
export function invalidAnswer(provider: string, what: string): ImageGenError {
	return new ImageGenError(502, `The ${provider} provider answered ${what}`, { code: 'upstream_invalid_output' });
}
