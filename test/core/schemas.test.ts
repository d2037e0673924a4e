import {
	DEFAULTS,
	EXTENDED_ASPECT_RATIOS,
	MODEL_IDS,
	SEED_MAX,
	STANDARD_ASPECT_RATIOS,
	parseGenerationRequest,
	parseUploadJson,
	parseUploadOutputFormat,
} from '../../index';
import { thrownImageGenError } from '../helpers/image-gen-error';

const PNG_BASE64 = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex').toString('base64');

const rejection = (body: unknown) => thrownImageGenError(() => parseGenerationRequest(body), JSON.stringify(body).slice(0, 200));

describe('parseGenerationRequest', () => {
	describe('webhook_url', () => {
		it.each(MODEL_IDS)('%s takes an http or https webhook_url, and none at all', (model) => {
			const body = model === 'p-image-edit' ? { model, prompt: 'a cat', images: PNG_BASE64 } : { model, prompt: 'a cat' };
			expect(parseGenerationRequest({ ...body, webhook_url: 'https://n8n.example/webhook-waiting/1' }).webhook_url).toBe('https://n8n.example/webhook-waiting/1');
			expect(parseGenerationRequest({ ...body, webhook_url: 'http://127.0.0.1:5678/x' }).webhook_url).toBe('http://127.0.0.1:5678/x');
			expect(parseGenerationRequest(body).webhook_url).toBeUndefined();
		});

		it('takes 2,048 characters and refuses 2,049, naming webhook_url', () => {
			const url = (length: number) => `https://hooks.example/${'a'.repeat(length - 'https://hooks.example/'.length)}`;
			expect(parseGenerationRequest({ model: 'p-image', prompt: 'a cat', webhook_url: url(2048) }).webhook_url).toHaveLength(2048);
			const error = rejection({ model: 'p-image', prompt: 'a cat', webhook_url: url(2049) });
			expect([error.status, error.param, error.code]).toEqual([400, 'webhook_url', 'too_long']);
			expect(error.message).toBe("'webhook_url' is too long: at most 2048 characters; got 2049");
		});

		it.each([
			['ftp://hooks.example/x', /scheme 'ftp:'/],
			['file:///etc/passwd', /scheme 'file:'/],
			['hooks.example/x', /must be an http or https URL; got 'hooks.example\/x'/],
			['', /must be an http or https URL/],
			['https://user:pass@hooks.example/x', /credentials/],
			[42, /got a number/],
			[null, /got null/],
			[['https://hooks.example'], /got an array/],
		])('refuses %p, naming webhook_url', (webhookUrl, message) => {
			const error = rejection({ model: 'textimage-v2', prompt: 'a cat', webhook_url: webhookUrl });
			expect([error.status, error.param]).toEqual([400, 'webhook_url']);
			expect(error.message).toMatch(/^'webhook_url' /);
			expect(error.message).toMatch(message);
		});
	});

	describe('seed', () => {
		it.each(MODEL_IDS)('%s takes an integer seed from 0 to 2147483647, and none at all', (model) => {
			const body = model === 'p-image-edit' ? { model, prompt: 'a cat', images: PNG_BASE64 } : { model, prompt: 'a cat' };
			expect(parseGenerationRequest({ ...body, seed: 0 }).seed).toBe(0);
			expect(parseGenerationRequest({ ...body, seed: SEED_MAX }).seed).toBe(2_147_483_647);
			expect(parseGenerationRequest(body).seed).toBeUndefined();
		});

		it.each([-1, 0.5, 2_147_483_648, Number.MAX_SAFE_INTEGER, '7', null, [1], { value: 1 }])('refuses %p, naming seed', (seed) => {
			const error = rejection({ model: 'p-image', prompt: 'a cat', seed });
			expect(error.status).toBe(400);
			expect(error.param).toBe('seed');
			expect(error.message).toMatch(/^'seed' must be a whole number from 0 to 2147483647; got /);
		});
	});

	it.each(MODEL_IDS)('applies the documented defaults for %s', (model) => {
		const body = model === 'p-image-edit' ? { model, prompt: 'a cat', images: PNG_BASE64 } : { model, prompt: 'a cat' };
		const parsed = parseGenerationRequest(body);
		expect(parsed).toMatchObject({
			aspect_ratio: model === 'p-image-edit' ? 'match_input_image' : DEFAULTS.aspect_ratio,
			response_format: 'url',
			output_format: 'png',
		});
		if (model === 'textimage-v2') {
			expect(parsed).toMatchObject({ style_type: 'AUTO', magic_prompt_option: 'AUTO' });
		} else {
			expect(parsed).not.toHaveProperty('style_type');
		}
	});

	it('requires a model and names it', () => {
		const error = rejection({ prompt: 'x' });
		expect(error).toMatchObject({ status: 400, param: 'model', code: 'missing_field' });
		expect(error.message).toContain('p-image, p-image-edit, textimage-v2');
	});

	it('rejects an unknown model and quotes it', () => {
		expect(rejection({ model: 'dall-e', prompt: 'x' })).toMatchObject({ param: 'model' });
		expect(rejection({ model: 'dall-e', prompt: 'x' }).message).toContain("'dall-e'");
	});

	it.each([
		['missing', {}, 'is required'],
		['empty', { prompt: '' }, 'must not be empty'],
		['white space only', { prompt: ' \n\t ' }, 'must not be empty'],
		['not a string', { prompt: 42 }, 'must be a string'],
		['too long', { prompt: 'x'.repeat(10_001) }, 'at most 10000 characters; got 10001'],
	])('rejects a prompt that is %s, for every model', (_case, fields, message) => {
		for (const model of MODEL_IDS) {
			const images = model === 'p-image-edit' ? { images: PNG_BASE64 } : {};
			const error = rejection({ model, ...images, ...fields });
			expect(error).toMatchObject({ status: 400, param: 'prompt' });
			expect(error.message).toContain(message);
		}
	});

	it('accepts a prompt of exactly 10,000 characters for every model', () => {
		for (const model of MODEL_IDS) {
			const images = model === 'p-image-edit' ? { images: PNG_BASE64 } : {};
			expect(parseGenerationRequest({ model, prompt: 'x'.repeat(10_000), ...images }).prompt).toHaveLength(10_000);
		}
	});

	it('gives each model its own aspect ratios', () => {
		for (const ratio of STANDARD_ASPECT_RATIOS) {
			expect(parseGenerationRequest({ model: 'p-image', prompt: 'x', aspect_ratio: ratio }).aspect_ratio).toBe(ratio);
		}
		for (const ratio of EXTENDED_ASPECT_RATIOS) {
			expect(parseGenerationRequest({ model: 'textimage-v2', prompt: 'x', aspect_ratio: ratio }).aspect_ratio).toBe(ratio);
		}
		for (const ratio of ['16:10', '10:16', '3:1', '1:3']) {
			const error = rejection({ model: 'p-image', prompt: 'x', aspect_ratio: ratio });
			expect(error).toMatchObject({ param: 'aspect_ratio' });
			expect(error.message).toContain("for model 'p-image'");
		}
		expect(rejection({ model: 'textimage-v2', prompt: 'x', aspect_ratio: '5:4' }).param).toBe('aspect_ratio');
	});

	it('checks output and response formats', () => {
		for (const format of ['png', 'jpeg', 'webp']) {
			expect(parseGenerationRequest({ model: 'textimage-v2', prompt: 'x', output_format: format }).output_format).toBe(format);
		}
		expect(rejection({ model: 'p-image', prompt: 'x', output_format: 'jpg' }).param).toBe('output_format');
		expect(rejection({ model: 'p-image', prompt: 'x', output_format: 'gif' }).param).toBe('output_format');
		expect(parseGenerationRequest({ model: 'p-image', prompt: 'x', response_format: 'b64_json' }).response_format).toBe('b64_json');
		expect(rejection({ model: 'p-image', prompt: 'x', response_format: 'base64' }).param).toBe('response_format');
		expect(rejection({ model: 'p-image', prompt: 'x', response_format: 1 }).message).toContain('must be a string: one of url, b64_json; got a number');
	});

	it('checks the textimage-v2 options', () => {
		const parsed = parseGenerationRequest({
			model: 'textimage-v2',
			prompt: 'x',
			negative_prompt: 'blur',
			style_type: 'ANIME',
			magic_prompt_option: 'OFF',
		});
		expect(parsed).toMatchObject({ negative_prompt: 'blur', style_type: 'ANIME', magic_prompt_option: 'OFF' });
		expect(rejection({ model: 'textimage-v2', prompt: 'x', style_type: 'anime' }).param).toBe('style_type');
		expect(rejection({ model: 'textimage-v2', prompt: 'x', magic_prompt_option: 'YES' }).param).toBe('magic_prompt_option');
		const long = rejection({ model: 'textimage-v2', prompt: 'x', negative_prompt: 'n'.repeat(10_001) });
		expect(long).toMatchObject({ param: 'negative_prompt', code: 'too_long' });
	});

	it('refuses fields of another model, naming the field and where it belongs', () => {
		const error = rejection({ model: 'p-image', prompt: 'x', negative_prompt: 'y' });
		expect(error).toMatchObject({ param: 'negative_prompt', code: 'field_not_supported' });
		expect(error.message).toContain('textimage-v2');
		expect(rejection({ model: 'textimage-v2', prompt: 'x', images: PNG_BASE64 })).toMatchObject({ param: 'images' });
		expect(rejection({ model: 'p-image-edit', prompt: 'x', images: PNG_BASE64, style_type: 'AUTO' })).toMatchObject({
			param: 'style_type',
		});
	});

	it('refuses unknown fields', () => {
		expect(rejection({ model: 'p-image', prompt: 'x', strength: 2 })).toMatchObject({ param: 'strength', code: 'unknown_field' });
	});

	it('refuses a body that is not an object', () => {
		for (const body of [null, [], 'text', 3]) {
			expect(rejection(body)).toMatchObject({ status: 400, param: null, code: 'invalid_body' });
		}
	});

	describe('images of p-image-edit', () => {
		const edit = (images: unknown) => ({ model: 'p-image-edit', prompt: 'x', images });

		it('accepts a single string and normalises it to an array', () => {
			expect(parseGenerationRequest(edit('https://example.com/a.png')).images).toEqual(['https://example.com/a.png']);
		});

		it('accepts URLs, data URIs and raw base64 up to 10', () => {
			const inputs = [
				'https://example.com/a.png',
				`data:image/png;base64,${PNG_BASE64}`,
				PNG_BASE64,
				...Array.from({ length: 7 }, () => PNG_BASE64),
			];
			expect(parseGenerationRequest(edit(inputs)).images).toHaveLength(10);
		});

		it('refuses 11 images, none, and a missing field', () => {
			expect(rejection(edit(Array.from({ length: 11 }, () => PNG_BASE64))).message).toContain('at most 10 images, got 11');
			expect(rejection(edit([]))).toMatchObject({ param: 'images' });
			expect(rejection({ model: 'p-image-edit', prompt: 'x' })).toMatchObject({ param: 'images', code: 'missing_field' });
		});

		it('names the index of a bad entry', () => {
			expect(rejection(edit([PNG_BASE64, 'ftp://host/a.png']))).toMatchObject({
				param: 'images[1]',
				code: 'unsupported_url_scheme',
			});
			expect(rejection(edit([PNG_BASE64, PNG_BASE64, 7]))).toMatchObject({ param: 'images[2]' });
			expect(rejection(edit(['not base64 !!']))).toMatchObject({ param: 'images[0]', code: 'invalid_base64' });
			expect(rejection(edit({ url: 'x' }))).toMatchObject({ param: 'images', code: 'invalid_type' });
		});
	});
});

describe('parseUploadJson', () => {
	it('takes exactly one of file, image or video', () => {
		expect(parseUploadJson({ image: 'https://example.com/a.png' })).toMatchObject({ field: 'image' });
		expect(parseUploadJson({ video: PNG_BASE64 })).toMatchObject({ field: 'video', input: { kind: 'bytes' } });
		expect(parseUploadJson({ file: 'https://example.com/clip' })).toMatchObject({ field: 'file', input: { kind: 'url' } });
		expect(parseUploadJson({ file: PNG_BASE64, output_format: 'png' })).toMatchObject({ field: 'file', outputFormat: 'png' });
		expect(() => parseUploadJson({})).toThrow(expect.objectContaining({ param: 'file', code: 'missing_field' }));
		expect(() => parseUploadJson({ image: PNG_BASE64, video: PNG_BASE64 })).toThrow(
			expect.objectContaining({ param: 'video', code: 'conflicting_fields' }),
		);
		expect(() => parseUploadJson({ file: PNG_BASE64, image: PNG_BASE64 })).toThrow(
			expect.objectContaining({ param: 'image', code: 'conflicting_fields' }),
		);
	});

	it('accepts output_format for images only, with jpeg as an alias of jpg', () => {
		expect(parseUploadJson({ image: PNG_BASE64, output_format: 'jpg' }).outputFormat).toBe('jpeg');
		expect(parseUploadJson({ image: PNG_BASE64, output_format: 'JPEG' }).outputFormat).toBe('jpeg');
		expect(parseUploadJson({ image: PNG_BASE64, output_format: 'webp' }).outputFormat).toBe('webp');
		expect(() => parseUploadJson({ image: PNG_BASE64, output_format: 'tiff' })).toThrow(
			expect.objectContaining({ param: 'output_format' }),
		);
		expect(() => parseUploadJson({ video: PNG_BASE64, output_format: 'png' })).toThrow(
			expect.objectContaining({ param: 'output_format', code: 'field_not_supported' }),
		);
	});

	it('refuses unknown fields and non-string inputs', () => {
		expect(() => parseUploadJson({ image: PNG_BASE64, files: 'x' })).toThrow(expect.objectContaining({ param: 'files', code: 'unknown_field' }));
		expect(() => parseUploadJson({ file: 12 })).toThrow(expect.objectContaining({ param: 'file' }));
		expect(() => parseUploadJson({ image: 12 })).toThrow(expect.objectContaining({ param: 'image' }));
		expect(() => parseUploadOutputFormat(3)).toThrow(/must be a string/);
	});
});
