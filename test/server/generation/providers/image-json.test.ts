/**
 * The image-carrying JSON reader against JSON.parse and Node's base64 decoder: the same value for
 * any answer cut into chunks anywhere, its long strings as the bytes they encode, escapes and
 * multi-byte characters across chunk boundaries, and an answer that is not JSON told apart from an
 * HTML page.
 */
import { randomBytes } from 'node:crypto';
import { base64Bytes, ImageJsonReader, NotJsonError } from '../../../../server/src/generation/providers/image-json';

/** 60 KB of bytes: 80 KB of base64, over the length the reader decodes on the way. */
const IMAGE = randomBytes(60_000);
const BASE64 = IMAGE.toString('base64');

/** Reads the text in the chunks `cut` gives, told its length as a Content-Length tells it, or not (chunked). */
function read(text: string | Buffer, cut: (length: number) => number[], { told = true } = {}): unknown {
	const bytes = Buffer.isBuffer(text) ? text : Buffer.from(text);
	const reader = new ImageJsonReader(told ? bytes.length : undefined);
	let at = 0;
	for (const size of cut(bytes.length)) {
		reader.write(bytes.subarray(at, at + size));
		at += size;
	}
	reader.write(bytes.subarray(at));
	return reader.end();
}

const whole = (): number[] => [];
const every = (size: number) => (length: number) => Array.from({ length: Math.floor(length / size) }, () => size);
/** Seeded, so that a failure can be repeated. */
function randomCuts(seed: number) {
	return (length: number) => {
		const sizes: number[] = [];
		let state = seed;
		for (let total = 0; total < length; ) {
			state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
			const size = 1 + (state % 9_000);
			sizes.push(size);
			total += size;
		}
		return sizes;
	};
}

/** JSON.parse's value with each long base64 string as the bytes Node decodes from it. */
function expected(text: string): unknown {
	return comparable(JSON.parse(text, (_key, value: unknown) => (typeof value === 'string' && value.length > 64 * 1024 ? Buffer.from(value, 'base64') : value)));
}

/** Buffers as text, which Jest compares at once, where it walks a Buffer byte by byte. */
function comparable(value: unknown): unknown {
	if (Buffer.isBuffer(value)) return `bytes ${value.toString('hex')}`;
	if (Array.isArray(value)) return value.map(comparable);
	if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, each]) => [key, comparable(each)]));
	return value;
}

const answer = JSON.stringify({
	created: 1_700_000_000,
	data: [{ b64_json: BASE64, revised_prompt: 'a "quoted" \\ path\nwith é, 漢字 and 🦊' }],
	usage: { total_tokens: 42 },
});

type Cut = (length: number) => number[];
test.each<[string, Cut]>([
	['whole', whole],
	['one byte at a time', every(1)],
	['three bytes at a time', every(3)],
	['64 KiB at a time', every(64 * 1024)],
	...[1, 2, 3, 4, 5].map((seed): [string, Cut] => [`random cuts, seed ${seed}`, randomCuts(seed)]),
])('an OpenAI answer cut %s: the same value as JSON.parse, the image as its bytes', (_name, cut) => {
	for (const told of [true, false]) {
		const value = read(answer, cut, { told }) as { data: Array<{ b64_json: unknown }> };
		expect(comparable(value)).toEqual(expected(answer));
		expect(Buffer.isBuffer(value.data[0]!.b64_json)).toBe(true);
		expect((value.data[0]!.b64_json as Buffer).equals(IMAGE)).toBe(true);
	}
});

test('an image of 3 MB in an answer of untold length: its buffer grows and holds it whole; told, it is decoded into one buffer of its size', () => {
	const large = randomBytes(3_000_000);
	const text = JSON.stringify({ data: [{ b64_json: large.toString('base64') }] });
	const untold = read(text, every(65_536), { told: false }) as { data: Array<{ b64_json: Buffer }> };
	expect(untold.data[0]!.b64_json.equals(large)).toBe(true);
	const told = read(text, every(65_536)) as { data: Array<{ b64_json: Buffer }> };
	expect(told.data[0]!.b64_json.equals(large)).toBe(true);
	// Each in a buffer of its own size, which owns its memory, so that it can be released at once.
	for (const image of [untold.data[0]!.b64_json, told.data[0]!.b64_json]) expect(image.buffer.byteLength).toBe(large.length);
});

test('two images in an answer of told length: the first, decoded into a buffer sized for both, is brought to its own size', () => {
	const [first, second] = [randomBytes(500_000), randomBytes(1_000_000)];
	const text = JSON.stringify({ images: [first.toString('base64'), second.toString('base64')] });
	const value = read(text, every(65_536)) as { images: Buffer[] };
	expect(value.images[0]!.equals(first)).toBe(true);
	expect(value.images[0]!.buffer.byteLength).toBe(first.length);
	expect(value.images[1]!.equals(second)).toBe(true);
});

test('every cut near the long string’s start and end, where a quote may end it', () => {
	const text = JSON.stringify({ images: [BASE64], info: '{"seed": 1, "note": "a \\"quote\\""}' });
	const starts = [text.indexOf(BASE64) - 3, text.indexOf(BASE64) + BASE64.length - 3];
	for (const start of starts) {
		for (let cut = start; cut < start + 8; cut++) expect(comparable(read(text, () => [cut]))).toEqual(expected(text));
	}
});

test('a base64 with its slashes escaped (PHP’s encoder) and MIME line breaks: the same bytes', () => {
	const lines = BASE64.match(/.{1,76}/g)!.join('\n');
	const text = JSON.stringify({ images: [lines] }).replaceAll('/', '\\/');
	for (const cut of [whole, every(1), every(2), randomCuts(7)]) {
		const value = read(text, cut) as { images: Buffer[] };
		expect(value.images[0]!.equals(IMAGE)).toBe(true);
	}
});

test('\\u escapes inside a long base64 string are read as the characters they name', () => {
	const text = `{"b64_json":"${BASE64.replace(/A/g, '\\u0041')}"}`;
	for (const cut of [whole, every(1), every(5)]) expect((read(text, cut) as { b64_json: Buffer }).b64_json.equals(IMAGE)).toBe(true);
});

test('characters outside base64 and data after padding are skipped as Node’s decoder skips them', () => {
	const noisy = `${BASE64.slice(0, 40_000)} !*${BASE64.slice(40_000)}QUJD`;
	const text = JSON.stringify({ images: [noisy] });
	for (const cut of [whole, every(7), randomCuts(3)]) expect((read(text, cut) as { images: Buffer[] }).images[0]!.equals(Buffer.from(noisy, 'base64'))).toBe(true);
});

test('two long strings in one answer (a batch from WebUI): each its own bytes', () => {
	const other = randomBytes(70_000);
	const text = JSON.stringify({ images: [BASE64, other.toString('base64')], parameters: { prompt: 'x' } });
	const value = read(text, randomCuts(11)) as { images: Buffer[]; parameters: unknown };
	expect(value.images[0]!.equals(IMAGE)).toBe(true);
	expect(value.images[1]!.equals(other)).toBe(true);
	expect(value.parameters).toEqual({ prompt: 'x' });
});

test('short strings stay strings, escapes and all, whatever they look like', () => {
	const text = JSON.stringify({ b64_json: 'QUJD', note: '\u0000abc:0', path: 'C:\\\\dir\\"', emoji: '🦊'.repeat(50) });
	for (const cut of [whole, every(1), every(2), every(3)]) expect(read(text, cut)).toEqual(JSON.parse(text));
});

test('base64Bytes reads a field either way, and finds nothing in an empty or missing one', () => {
	expect(base64Bytes('QUJD')).toEqual(Buffer.from('ABC'));
	expect(base64Bytes(Buffer.from('ABC'))).toEqual(Buffer.from('ABC'));
	for (const nothing of ['', Buffer.alloc(0), undefined, 42, null]) expect(base64Bytes(nothing)).toBeUndefined();
});

test.each([
	['cut short inside its image', answer.slice(0, 50_000), false],
	['cut short after its image', answer.slice(0, -3), false],
	['empty', '', false],
	['an HTML page', '\n  <!doctype html><html><body class="x">Sign in</body></html>', true],
])('an answer %s is NotJsonError, HTML pages told apart', (_name, text, htmlPage) => {
	for (const cut of [whole, randomCuts(5)]) {
		expect(() => read(text, cut)).toThrow(NotJsonError);
		try {
			read(text, cut);
		} catch (error) {
			expect((error as NotJsonError).htmlPage).toBe(htmlPage);
		}
	}
});
