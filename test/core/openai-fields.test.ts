/**
 * OpenAI's images fields on our generation request: `n`, `size`, and those accepted and ignored,
 * each refused with its own name when its type is wrong; other unknown fields stay refused.
 */
import { parseGenerationRequest } from '../../index';
import { thrownImageGenError } from '../helpers/image-gen-error';

const PNG_BASE64 = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex').toString('base64');
const CAT = { model: 'p-image', prompt: 'a cat' } as const;

const rejection = (body: unknown) => thrownImageGenError(() => parseGenerationRequest(body), JSON.stringify(body));

describe('n', () => {
	it('is left out when absent or null (one image), and takes 1 to 10', () => {
		expect(parseGenerationRequest(CAT)).not.toHaveProperty('n');
		expect(parseGenerationRequest({ ...CAT, n: null })).not.toHaveProperty('n');
		expect(parseGenerationRequest({ ...CAT, n: 3 }).n).toBe(3);
		expect(parseGenerationRequest({ ...CAT, n: 10 }).n).toBe(10);
	});

	it.each([
		[11, "'n' must be a whole number from 1 to 10; got 11"],
		[0, "'n' must be a whole number from 1 to 10; got 0"],
		[2.5, "'n' must be a whole number from 1 to 10; got 2.5"],
		['3', "'n' must be a whole number from 1 to 10; got a string"],
	])('refuses %p, naming n', (n, message) => {
		const error = rejection({ ...CAT, n });
		expect([error.status, error.param, error.message]).toEqual([400, 'n', message]);
	});
});

describe('size', () => {
	it.each([
		['1024x1024', '1:1'],
		['1792x1024', '16:9'],
		['1024x1792', '9:16'],
		['1536x1024', '3:2'],
		['1024x1536', '2:3'],
		['1280x960', '4:3'],
		['960x1280', '3:4'],
		['256x256', '1:1'],
		['3000x1000', '16:9'],
	])('p-image reads %s as the catalog ratio %s', (size, ratio) => {
		expect(parseGenerationRequest({ ...CAT, size }).aspect_ratio).toBe(ratio);
	});

	it("uses the model's own ratios: textimage-v2 has 3:1 and 16:10", () => {
		expect(parseGenerationRequest({ model: 'textimage-v2', prompt: 'a cat', size: '3000x1000' }).aspect_ratio).toBe('3:1');
		expect(parseGenerationRequest({ model: 'textimage-v2', prompt: 'a cat', size: '1600x1000' }).aspect_ratio).toBe('16:10');
	});

	it("auto is the model's default, p-image-edit's match_input_image too", () => {
		expect(parseGenerationRequest({ ...CAT, size: 'auto' }).aspect_ratio).toBe('1:1');
		const edit = { model: 'p-image-edit', prompt: 'a hat', images: PNG_BASE64 };
		expect(parseGenerationRequest({ ...edit, size: 'auto' }).aspect_ratio).toBe('match_input_image');
		expect(parseGenerationRequest(edit).aspect_ratio).toBe('match_input_image');
		expect(parseGenerationRequest({ ...edit, size: '1792x1024' }).aspect_ratio).toBe('16:9');
	});

	it('is not passed on: the request carries the ratio only', () => {
		expect(parseGenerationRequest({ ...CAT, size: '1024x1024' })).not.toHaveProperty('size');
	});

	it.each(['1024', '1024x', 'x1024', '0x1024', '1024x0', '-1x5', '1024 x 1024', '1024X1024', 'large', '', '1.5x2'])('refuses %p, naming size', (size) => {
		const error = rejection({ ...CAT, size });
		expect([error.status, error.param]).toEqual([400, 'size']);
		expect(error.message).toContain("'size' must be <width>x<height>");
	});

	it('refuses a number, naming size', () => {
		const error = rejection({ ...CAT, size: 1024 });
		expect([error.status, error.param, error.code]).toEqual([400, 'size', 'invalid_type']);
	});

	it('refuses size with aspect_ratio, naming size', () => {
		const error = rejection({ ...CAT, size: '1024x1024', aspect_ratio: '16:9' });
		expect([error.status, error.param, error.code]).toEqual([400, 'size', 'conflicting_fields']);
	});
});

describe('fields OpenAI clients send that our hosts ignore', () => {
	const ignored = { quality: 'hd', style: 'vivid', user: 'user-1234', background: 'transparent', moderation: 'low', output_compression: 80 };

	it('are accepted and dropped', () => {
		const request = parseGenerationRequest({ ...CAT, ...ignored });
		for (const field of Object.keys(ignored)) expect(request).not.toHaveProperty(field);
		expect(parseGenerationRequest({ ...CAT, quality: null, style: null, output_compression: null })).not.toHaveProperty('quality');
	});

	it.each([
		['quality', 3],
		['style', true],
		['user', { id: 1 }],
		['background', 0],
		['moderation', []],
		['output_compression', 'high'],
		['output_compression', 101],
		['output_compression', -1],
		['output_compression', 50.5],
	])('refuses %s = %p, naming it', (field, value) => {
		const error = rejection({ ...CAT, [field]: value });
		expect([error.status, error.param]).toEqual([400, field]);
		expect(error.message).toMatch(new RegExp(`^'${field}' must be`));
	});

	it('leaves other unknown fields refused', () => {
		for (const field of ['prompt_strength', 'sizes', 'partial_images_count']) {
			const error = rejection({ ...CAT, [field]: 1 });
			expect([error.status, error.param, error.code]).toEqual([400, field, 'unknown_field']);
		}
	});
});
