/**
 * JSON request bodies with images written from their bytes: the same text JSON.stringify makes of
 * the same value with the base64 inline, the length told beforehand, written again from its start
 * on every call (a redirect, a retry), and never one piece larger than a slice of the image.
 */
import { randomBytes } from 'node:crypto';
import { Base64Text, dataUri, jsonBody, type JsonBody } from '../../../../server/src/generation/providers/json-body';
import { makeImage } from '../../support/media';

const whole = (body: JsonBody) => Buffer.concat([...body.chunks()]);

test('a body without images is plain JSON text', () => {
	expect(jsonBody({ prompt: 'a fox', n: 1 })).toBe('{"prompt":"a fox","n":1}');
});

test.each([0, 1, 2, 3, 49_151, 49_152, 49_153, 1_000_000])('an image of %i bytes among other fields: the text JSON.stringify makes, its length told', (size) => {
	const bytes = randomBytes(size);
	const body = jsonBody({ prompt: 'ünïcode “quotes” 🦊', init_images: [new Base64Text(bytes)], steps: 20 }) as JsonBody;
	const expected = JSON.stringify({ prompt: 'ünïcode “quotes” 🦊', init_images: [bytes.toString('base64')], steps: 20 });
	expect(whole(body).toString()).toBe(expected);
	expect(body.length).toBe(Buffer.byteLength(expected));
});

test('data URIs of several images, in order, each written again from its start on every call', async () => {
	const [png, jpeg] = await Promise.all([makeImage('png', 300, 200), makeImage('jpeg', 300, 200)]);
	const body = jsonBody({ model: 'p-image-edit', images: [dataUri(png), dataUri(jpeg), dataUri(png)] }) as JsonBody;
	const expected = JSON.stringify({ model: 'p-image-edit', images: [`data:image/png;base64,${png.toString('base64')}`, `data:image/jpeg;base64,${jpeg.toString('base64')}`, `data:image/png;base64,${png.toString('base64')}`] });
	expect(whole(body).toString()).toBe(expected);
	expect(whole(body).toString()).toBe(expected);
	expect(body.length).toBe(expected.length);
});

test('a 20 MB image goes in pieces of 64 KiB of base64: no piece holds it whole', () => {
	const body = jsonBody({ init_images: [new Base64Text(randomBytes(20_000_000))] }) as JsonBody;
	let largest = 0;
	let total = 0;
	for (const chunk of body.chunks()) {
		largest = Math.max(largest, chunk.length);
		total += chunk.length;
	}
	expect(largest).toBe(64 * 1024);
	expect(total).toBe(body.length);
});

test('a prompt that looks like an image’s place in the text stays a prompt', () => {
	const bytes = randomBytes(30);
	const body = jsonBody({ prompt: '0 1 2', images: [new Base64Text(bytes)] }) as JsonBody;
	expect(JSON.parse(whole(body).toString())).toEqual({ prompt: '0 1 2', images: [bytes.toString('base64')] });
});
