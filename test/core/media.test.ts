import sharp from 'sharp';
import { decodeBase64, parseMediaInput, sniffMedia } from '../../index';
import { thrownImageGenError } from '../helpers/image-gen-error';

describe('parseMediaInput', () => {
	const bytes = Buffer.from('hello media');

	it('recognises http and https URLs', () => {
		expect(parseMediaInput('https://example.com/a.png?x=1', 'image')).toEqual({
			kind: 'url',
			url: new URL('https://example.com/a.png?x=1'),
		});
		expect(parseMediaInput('  HTTP://example.com/a  ', 'image').kind).toBe('url');
	});

	it('decodes data URIs and keeps the declared type as a hint only', () => {
		const parsed = parseMediaInput(`data:image/png;base64,${bytes.toString('base64')}`, 'image');
		expect(parsed).toEqual({ kind: 'bytes', bytes, declaredMimeType: 'image/png' });
		expect(parseMediaInput(`data:;base64,${bytes.toString('base64')}`, 'image')).toMatchObject({ bytes });
	});

	it('decodes raw base64: standard, URL-safe, unpadded, wrapped', () => {
		const data = Buffer.from([0xfb, 0xff, 0xfe, 0x01, 0x02]);
		const standard = data.toString('base64');
		expect(parseMediaInput(standard, 'image')).toEqual({ kind: 'bytes', bytes: data });
		expect(decodeBase64(data.toString('base64url'), 'image')).toEqual(data);
		expect(decodeBase64(standard.replace(/=+$/, ''), 'image')).toEqual(data);
		expect(decodeBase64(`${standard.slice(0, 4)}\n${standard.slice(4)}`, 'image')).toEqual(data);
	});

	it.each([
		['', 'empty_value', 'is empty'],
		['   ', 'empty_value', 'is empty'],
		['ftp://example.com/a.png', 'unsupported_url_scheme', "'ftp:'"],
		['file:///etc/passwd', 'unsupported_url_scheme', "'file:'"],
		['javascript:alert(1)', 'unsupported_url_scheme', "'javascript:'"],
		['http://', 'invalid_url', 'not a valid URL'],
		['https://user:pw@example.com/a.png', 'invalid_url', 'credentials'],
		['data:image/png,rawtext', 'invalid_data_uri', "without ';base64'"],
		['data:image/png;base64', 'invalid_data_uri', 'malformed data URI'],
		['data:image/png;base64,', 'empty_value', 'no base64 data'],
		['data:image/png;base64,@@@@', 'invalid_base64', 'position 0'],
		['abc$def', 'invalid_base64', 'position 3'],
		['abcde', 'invalid_base64', 'truncated'],
		['ab=cd', 'invalid_base64', 'misplaced padding'],
	])('refuses %j with a clear error naming the field', (value, code, text) => {
		const error = thrownImageGenError(() => parseMediaInput(value, 'images[4]'));
		expect(error).toMatchObject({ status: 400, param: 'images[4]', code });
		expect(error.message).toContain(text);
		expect(error.message).toContain("'images[4]'");
	});
});

function isoBmff(major: string, compatible: string[] = []): Buffer {
	const size = 16 + compatible.length * 4;
	const box = Buffer.alloc(size + 8);
	box.writeUInt32BE(size, 0);
	box.write('ftyp', 4, 'latin1');
	box.write(major, 8, 'latin1');
	compatible.forEach((brand, i) => box.write(brand, 16 + i * 4, 'latin1'));
	return box;
}

describe('sniffMedia', () => {
	it('identifies real images encoded by a codec', async () => {
		const base = sharp({ create: { width: 8, height: 8, channels: 3, background: '#3366ff' } });
		for (const [format, type] of [
			['png', 'png'],
			['jpeg', 'jpeg'],
			['webp', 'webp'],
			['gif', 'gif'],
			['avif', 'avif'],
		] as const) {
			const encoded = await base.clone().toFormat(format).toBuffer();
			expect(sniffMedia(encoded)).toMatchObject({ kind: 'image', type });
		}
	});

	it('identifies videos by their containers', () => {
		expect(sniffMedia(isoBmff('isom', ['isom', 'mp41']))).toMatchObject({ kind: 'video', type: 'mp4', mimeType: 'video/mp4' });
		expect(sniffMedia(isoBmff('mp42'))).toMatchObject({ type: 'mp4' });
		expect(sniffMedia(isoBmff('qt  '))).toMatchObject({ kind: 'video', type: 'mov', mimeType: 'video/quicktime' });
		const ebml = Buffer.concat([Buffer.from([0x1a, 0x45, 0xdf, 0xa3, 0x9f, 0x42, 0x82, 0x84]), Buffer.from('webm')]);
		expect(sniffMedia(ebml)).toMatchObject({ kind: 'video', type: 'webm', extension: 'webm' });
	});

	it('tells AVIF from MP4 by the brands, also when avif is only compatible', () => {
		expect(sniffMedia(isoBmff('avif'))).toMatchObject({ kind: 'image', type: 'avif' });
		expect(sniffMedia(isoBmff('mif1', ['mif1', 'avif']))).toMatchObject({ kind: 'image', type: 'avif' });
	});

	it('refuses what is not a supported image or video', () => {
		expect(sniffMedia(Buffer.from('%PDF-1.7\n'))).toBeNull();
		expect(sniffMedia(Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'))).toBeNull();
		expect(sniffMedia(isoBmff('heic', ['mif1', 'heic']))).toBeNull();
		const matroska = Buffer.concat([Buffer.from([0x1a, 0x45, 0xdf, 0xa3, 0x9f, 0x42, 0x82, 0x88]), Buffer.from('matroska')]);
		expect(sniffMedia(matroska)).toBeNull();
		expect(sniffMedia(Buffer.alloc(0))).toBeNull();
		expect(sniffMedia(Buffer.from([0x89, 0x50]))).toBeNull();
	});
});
