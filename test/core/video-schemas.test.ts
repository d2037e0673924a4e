/**
 * The video request as core checks it, JSON and multipart alike: defaults from the catalog, OpenAI's
 * `seconds` and `size` read as p-video's fields, and every bad field a 400 that names it.
 */
import { ImageGenError } from '../../core/errors';
import { VIDEO_MODELS, videoDimensions, videoPricePerSecond } from '../../core/video-models';
import { parseVideoRequest } from '../../core/video-schemas';

const refusal = (body: unknown): { param: string | null; code: string; message: string } => {
	try {
		parseVideoRequest(body);
	} catch (error) {
		expect(error).toBeInstanceOf(ImageGenError);
		const known = error as ImageGenError;
		expect(known.status).toBe(400);
		return { param: known.param ?? null, code: known.code, message: known.message };
	}
	throw new Error('the request was accepted');
};

test("a prompt alone takes the catalog's defaults", () => {
	expect(parseVideoRequest({ prompt: 'a kite' })).toEqual({
		model: 'p-video',
		prompt: 'a kite',
		seconds: 5,
		aspect_ratio: '16:9',
		resolution: '720p',
		fps: 24,
		draft: false,
		prompt_upsampling: true,
		save_audio: true,
	});
});

test('multipart text (every value a string) reads as JSON values do', () => {
	const parsed = parseVideoRequest({ model: 'p-video', prompt: 'a kite', seconds: '8', fps: '48', draft: 'true', save_audio: 'false', seed: '42', resolution: '1080p', aspect_ratio: '9:16' });
	expect(parsed).toMatchObject({ seconds: 8, fps: 48, draft: true, save_audio: false, seed: 42, resolution: '1080p', aspect_ratio: '9:16' });
});

test("OpenAI's size is the nearest ratio at the resolution of its short side", () => {
	expect(parseVideoRequest({ prompt: 'x', size: '1280x720' })).toMatchObject({ aspect_ratio: '16:9', resolution: '720p' });
	expect(parseVideoRequest({ prompt: 'x', size: '720x1280' })).toMatchObject({ aspect_ratio: '9:16', resolution: '720p' });
	expect(parseVideoRequest({ prompt: 'x', size: '1792x1024' })).toMatchObject({ aspect_ratio: '16:9', resolution: '1080p' });
	expect(parseVideoRequest({ prompt: 'x', size: '1024x1024' })).toMatchObject({ aspect_ratio: '1:1', resolution: '1080p' });
});

test('input_reference is the first frame, as a string or { image_url }', () => {
	expect(parseVideoRequest({ prompt: 'x', input_reference: 'https://example.com/frame.png' }).image).toBe('https://example.com/frame.png');
	expect(parseVideoRequest({ prompt: 'x', input_reference: { image_url: 'data:image/png;base64,iVBORw0KGgo=' } }).image).toBe('data:image/png;base64,iVBORw0KGgo=');
});

test.each([
	[{ prompt: 'x', model: 'sora-2' }, 'model'],
	[{ prompt: 'x', model: 'p-image' }, 'model'],
	[{}, 'prompt'],
	[{ prompt: '   ' }, 'prompt'],
	[{ prompt: 'x'.repeat(10_001) }, 'prompt'],
	[{ prompt: 'x', seconds: 0 }, 'seconds'],
	[{ prompt: 'x', seconds: '11' }, 'seconds'],
	[{ prompt: 'x', seconds: 2.5 }, 'seconds'],
	[{ prompt: 'x', seconds: 'five' }, 'seconds'],
	[{ prompt: 'x', size: '1280' }, 'size'],
	[{ prompt: 'x', size: '1280x720', aspect_ratio: '16:9' }, 'size'],
	[{ prompt: 'x', aspect_ratio: '21:9' }, 'aspect_ratio'],
	[{ prompt: 'x', resolution: '4k' }, 'resolution'],
	[{ prompt: 'x', fps: 30 }, 'fps'],
	[{ prompt: 'x', draft: 'yes' }, 'draft'],
	[{ prompt: 'x', seed: -1 }, 'seed'],
	[{ prompt: 'x', seed: 2 ** 31 }, 'seed'],
	[{ prompt: 'x', input_reference: 'ftp://example.com/a.png' }, 'input_reference'],
	[{ prompt: 'x', input_reference: { file_id: 'file_1' } }, 'input_reference.file_id'],
	[{ prompt: 'x', input_reference: 'https://example.com/a.png', image: 'https://example.com/b.png' }, 'input_reference'],
	[{ prompt: 'x', last_frame_image: 42 }, 'last_frame_image'],
	[{ prompt: 'x', audio: 'not base64 !!' }, 'audio'],
	[{ prompt: 'x', webhook_url: 'ftp://example.com/hook' }, 'webhook_url'],
	[{ prompt: 'x', quality: 'hd' }, 'quality'],
])('%j is refused naming %s', (body, param) => {
	expect(refusal(body).param).toBe(param);
});

test('a body that is not an object is refused', () => {
	expect(refusal('prompt=x').param).toBe('body');
	expect(refusal(null).param).toBe('body');
});

test('frames have the catalog shape at the asked resolution, even sides', () => {
	expect(videoDimensions('16:9', '720p')).toEqual({ width: 1280, height: 720 });
	expect(videoDimensions('9:16', '1080p')).toEqual({ width: 1080, height: 1920 });
	expect(videoDimensions('3:4', '720p')).toEqual({ width: 720, height: 960 });
	for (const ratio of VIDEO_MODELS['p-video'].aspectRatios) {
		for (const resolution of VIDEO_MODELS['p-video'].resolutions) {
			const { width, height } = videoDimensions(ratio, resolution);
			expect(width % 2 + (height % 2)).toBe(0);
		}
	}
});

test("prices per second: the catalog's, or the operator's 720p price in the catalog's proportions", () => {
	const spec = VIDEO_MODELS['p-video'];
	expect([videoPricePerSecond(spec, '720p', false), videoPricePerSecond(spec, '1080p', false), videoPricePerSecond(spec, '720p', true), videoPricePerSecond(spec, '1080p', true)]).toEqual([0.02, 0.04, 0.005, 0.01]);
	expect(videoPricePerSecond(spec, '1080p', false, 0.03)).toBeCloseTo(0.06, 10);
	expect(videoPricePerSecond(spec, '720p', true, 0.03)).toBeCloseTo(0.0075, 10);
});
