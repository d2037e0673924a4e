/**
 * The parameters of the video models (p-video), derived from core's video catalog and shown only
 * when a video model is chosen; the image-only parameters are hidden for them. The names are a
 * public API like the image ones: saved workflows hold them.
 */
import type { INodeProperties } from 'n8n-workflow';

import { VIDEO_MODEL_IDS, VIDEO_MODELS } from '../../core/video-models';

/** The API field behind each video parameter, so a refusal names what the user can change. */
export const VIDEO_FIELD_PARAMETERS: Readonly<Record<string, string>> = {
	model: 'model',
	prompt: 'prompt',
	seconds: 'duration',
	size: 'aspectRatio',
	aspect_ratio: 'aspectRatio',
	resolution: 'resolution',
	fps: 'fps',
	draft: 'draft',
	seed: 'seed',
	prompt_upsampling: 'promptUpsampling',
	save_audio: 'saveAudio',
	image: 'firstFrame',
	input_reference: 'firstFrame',
	last_frame_image: 'lastFrame',
	audio: 'audioUrl',
	webhook_url: 'webhookUrl',
};

/** Where a frame comes from; `none` leaves it out of the request. */
export type FrameSource = 'none' | 'binary' | 'url';

const showForVideo = (extra: Record<string, string[]> = {}) => ({ show: { model: [...VIDEO_MODEL_IDS], ...extra } });

/** Shown for every model but the video ones: parameters that describe an image. */
export const hideForVideo = { hide: { model: [...VIDEO_MODEL_IDS] } };

// The defaults are literals because n8n's linter reads them; a test holds them equal to the catalog's.
const P_VIDEO = VIDEO_MODELS['p-video'];

function frameProperties(name: 'firstFrame' | 'lastFrame', displayName: string, description: string): INodeProperties[] {
	return [
		{
			displayName,
			name,
			type: 'options',
			options: [
				{ name: 'None', value: 'none' },
				{ name: 'Binary File', value: 'binary', description: 'An image from the input item' },
				{ name: 'URL', value: 'url', description: 'A public http(s) address of the image, fetched by the service' },
			],
			default: 'none',
			description,
			displayOptions: showForVideo(),
		},
		{
			displayName: `${displayName} Input Binary Field`,
			name: `${name}BinaryPropertyName`,
			type: 'string',
			default: 'data',
			hint: 'The name of the input field holding the image',
			displayOptions: showForVideo({ [name]: ['binary'] }),
		},
		{
			displayName: `${displayName} URL`,
			name: `${name}Url`,
			type: 'string',
			default: '',
			placeholder: 'https://example.com/frame.png',
			displayOptions: showForVideo({ [name]: ['url'] }),
		},
	];
}

export const videoProperties: INodeProperties[] = [
	{
		displayName: 'Duration (Seconds)',
		name: 'duration',
		type: 'number',
		typeOptions: { minValue: P_VIDEO.minSeconds, maxValue: P_VIDEO.maxSeconds, numberPrecision: 0 },
		default: 5,
		description: `Length of the video, ${P_VIDEO.minSeconds} to ${P_VIDEO.maxSeconds} seconds; with an Audio URL the video follows the audio's length`,
		displayOptions: showForVideo(),
	},
	{
		displayName: 'Resolution',
		name: 'resolution',
		type: 'options',
		options: P_VIDEO.resolutions.map((resolution) => ({ name: resolution, value: resolution })),
		default: '720p',
		description: 'The short side of the frame: 720 or 1080 pixels',
		displayOptions: showForVideo(),
	},
	{
		displayName: 'FPS',
		name: 'fps',
		type: 'options',
		options: P_VIDEO.fps.map((fps) => ({ name: String(fps), value: fps })),
		default: 24,
		description: 'Frames per second',
		displayOptions: showForVideo(),
	},
	{
		displayName: 'Aspect Ratio',
		name: 'aspectRatio',
		type: 'options',
		options: P_VIDEO.aspectRatios.map((ratio) => ({ name: ratio, value: ratio })),
		default: '16:9',
		description: 'Width to height of the video; ignored with a First Frame, whose shape the video keeps',
		displayOptions: showForVideo(),
	},
	{
		displayName: 'Draft',
		name: 'draft',
		type: 'boolean',
		default: false,
		description: 'Whether to make a faster, cheaper preview (a quarter of the price)',
		displayOptions: showForVideo(),
	},
	...frameProperties('firstFrame', 'First Frame', 'An image the video starts from (image to video)'),
	...frameProperties('lastFrame', 'Last Frame', 'An image the video ends on'),
	{
		displayName: 'Audio URL',
		name: 'audioUrl',
		type: 'string',
		default: '',
		placeholder: 'https://example.com/voice.mp3',
		description: 'An audio track (FLAC, MP3 or WAV) the video is made to; its length sets the video\'s',
		displayOptions: showForVideo(),
	},
	{
		displayName: 'Prompt Upsampling',
		name: 'promptUpsampling',
		type: 'boolean',
		default: true,
		description: 'Whether the model enhances the prompt before generating',
		displayOptions: showForVideo(),
	},
	{
		displayName: 'Save Audio',
		name: 'saveAudio',
		type: 'boolean',
		default: true,
		description: 'Whether the video keeps its audio track',
		displayOptions: showForVideo(),
	},
];
