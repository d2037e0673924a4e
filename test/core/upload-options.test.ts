import { parseUploadJson } from '../../core/schemas';
import {
	UPLOAD_OPTION_BOUNDS,
	checkUploadOptionsFor,
	isUploadOptionField,
	parseUploadOption,
	parseUploadOptions,
	type UploadOptions,
} from '../../core/upload-options';
import { thrownImageGenError } from '../helpers/image-gen-error';

const limits = { retentionSeconds: 86_400 };
const PNG_BASE64 = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex').toString('base64');

describe('parseUploadOptions', () => {
	it('reads JSON numbers and multipart text alike', () => {
		const expected: UploadOptions = { expiresIn: 3600, maxSide: 1440, maxBytes: 8_000_000 };
		expect(parseUploadOptions({ expires_in: 3600, max_side: 1440, max_bytes: 8_000_000 }, limits)).toEqual(expected);
		expect(parseUploadOptions({ expires_in: '3600', max_side: '1440', max_bytes: '8000000' }, limits)).toEqual(expected);
		expect(parseUploadOptions({ expires_in: ' 3600\r\n' }, limits)).toEqual({ expiresIn: 3600 });
	});

	it('treats absent, undefined and null as not given and ignores other keys', () => {
		expect(parseUploadOptions({}, limits)).toEqual({});
		expect(parseUploadOptions({ expires_in: undefined, max_side: null, image: 'x', output_format: 'png' }, limits)).toEqual({});
	});

	it.each([
		['expires_in', 60],
		['expires_in', 86_400],
		['max_side', 16],
		['max_side', 8192],
		['max_bytes', 10_240],
		['max_bytes', 2 ** 40],
	] as const)('accepts %s = %i (a bound)', (field, value) => {
		expect(parseUploadOption(field, value, limits)).toBe(value);
		expect(parseUploadOption(field, String(value), limits)).toBe(value);
	});

	it.each([
		['expires_in', 59, /between 60 and 86400 seconds; got 59/],
		['expires_in', 86_401, /between 60 and 86400 seconds; got 86401/],
		['expires_in', 0, /between 60 and 86400/],
		['max_side', 15, /between 16 and 8192 pixels; got 15/],
		['max_side', 8193, /between 16 and 8192 pixels/],
		['max_bytes', 10_239, /at least 10240 bytes; got 10239/],
	] as const)('rejects %s = %i as out of range, naming the field', (field, value, message) => {
		for (const sent of [value, String(value)]) {
			const error = thrownImageGenError(() => parseUploadOption(field, sent, limits));
			expect(error.status).toBe(400);
			expect(error.param).toBe(field);
			expect(error.code).toBe('out_of_range');
			expect(error.message).toMatch(message);
		}
	});

	it.each([
		['3600.5'],
		['abc'],
		[''],
		['   '],
		['-60'],
		['+3600'],
		['1e3'],
		['0x100'],
		['3600 s'],
		['١٢٣'],
		['99999999999999999999'],
		[3600.5],
		[Number.NaN],
		[Number.POSITIVE_INFINITY],
		[true],
		[[3600]],
		[{ seconds: 3600 }],
	])('rejects %p as not a whole number', (value) => {
		const error = thrownImageGenError(() => parseUploadOptions({ expires_in: value }, limits));
		expect(error.status).toBe(400);
		expect(error.param).toBe('expires_in');
		expect(error.code).toBe('invalid_type');
		expect(error.message).toMatch(/'expires_in' must be a whole number of seconds; got /);
	});

	it('bounds expires_in by the retention it is given', () => {
		expect(parseUploadOption('expires_in', 600, { retentionSeconds: 600 })).toBe(600);
		expect(thrownImageGenError(() => parseUploadOption('expires_in', 601, { retentionSeconds: 600 })).message).toMatch(/between 60 and 600/);
		const tiny = thrownImageGenError(() => parseUploadOption('expires_in', 60, { retentionSeconds: 30 }));
		expect(tiny.param).toBe('expires_in');
		expect(tiny.message).toMatch(/keeps files only 30 seconds/);
		// The image limits do not depend on the retention.
		expect(parseUploadOption('max_side', 100, { retentionSeconds: 30 })).toBe(100);
	});

	it('names the first offending field', () => {
		expect(thrownImageGenError(() => parseUploadOptions({ expires_in: 60, max_side: 'big', max_bytes: 1 }, limits)).param).toBe('max_side');
	});

	it('exposes the bounds and the field names', () => {
		expect(UPLOAD_OPTION_BOUNDS.max_side).toEqual({ min: 16, max: 8192 });
		expect(isUploadOptionField('max_bytes')).toBe(true);
		expect(isUploadOptionField('output_format')).toBe(false);
	});
});

describe('checkUploadOptionsFor', () => {
	it('lets images take every option and videos only expires_in', () => {
		expect(() => checkUploadOptionsFor('image', { expiresIn: 60, maxSide: 100, maxBytes: 20_000 })).not.toThrow();
		expect(() => checkUploadOptionsFor('video', { expiresIn: 60 })).not.toThrow();
	});

	it.each([
		['max_side', { maxSide: 100 }],
		['max_bytes', { maxBytes: 20_000 }],
	] as const)('rejects %s with a video, naming it', (field, options) => {
		const error = thrownImageGenError(() => checkUploadOptionsFor('video', options));
		expect(error.status).toBe(400);
		expect(error.param).toBe(field);
		expect(error.code).toBe('field_not_supported');
	});
});

describe('parseUploadJson with upload options', () => {
	it('accepts the option fields, leaving them to parseUploadOptions', () => {
		const body = { image: PNG_BASE64, expires_in: 3600, max_side: 1440, max_bytes: 8_000_000 };
		expect(parseUploadJson(body).field).toBe('image');
		expect(parseUploadOptions(body, limits)).toEqual({ expiresIn: 3600, maxSide: 1440, maxBytes: 8_000_000 });
	});

	it('still rejects unknown fields', () => {
		const error = thrownImageGenError(() => parseUploadJson({ image: PNG_BASE64, expires: 3600 }));
		expect(error.param).toBe('expires');
		expect(error.code).toBe('unknown_field');
	});
});
