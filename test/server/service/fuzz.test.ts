/**
 * Hostile input, generated: random and mutated generation and upload bodies (wrong types, huge
 * numbers, deep junk, unicode with lone surrogates, broken base64, truncated multipart, raw
 * garbage). Every answer must be a 2xx, or a 4xx JSON error that names a field or none — never a
 * 5xx, a hang or a crash. Every URL in the inputs points at addresses the service refuses before
 * connecting, so nothing leaves the machine.
 */
import fc from 'fast-check';
import { startServer, type RunningServer } from '../../helpers/server';
import { gifDeclaring, jpegDeclaring, pngBomb, webpDeclaring } from '../support/bombs';
import { makeImage } from '../support/media';
import { startFleet, startInfrastructure } from '../support/replicas';

let server: RunningServer;
let png: string;
/** Status classes seen per endpoint: the fuzzing must reach the success path, not only the 400s. */
const seen = new Map<string, Set<number>>();
let sent = 0;

/** Each configuration: how to start it, and how many runs per property (CI has two cores). */
const CONFIGURATIONS: Array<[string, () => Promise<{ server: RunningServer; stop: () => Promise<void> }>, number]> = [
	[
		'embedded engines',
		async () => {
			const started = await startServer();
			return { server: started, stop: () => started.stop({ removeData: true }) };
		},
		300,
	],
	[
		'S3 + PostgreSQL',
		async () => {
			const infrastructure = await startInfrastructure();
			const fleet = await startFleet(infrastructure, { count: 1 });
			return {
				server: fleet.replicas[0]!,
				stop: async () => {
					await fleet.stop();
					await infrastructure.stop();
				},
			};
		},
		100,
	],
];

beforeAll(async () => {
	png = (await makeImage('png', 16, 12)).toString('base64');
});

async function send(path: string, body: string | Uint8Array, contentType: string): Promise<{ status: number; text: string }> {
	const response = await fetch(`${server.baseUrl}${path}`, {
		method: 'POST',
		headers: { authorization: `Bearer ${server.apiKey}`, 'content-type': contentType, ...idempotencyHeader() },
		body,
		signal: AbortSignal.timeout(15_000),
	});
	const classes = seen.get(path) ?? new Set<number>();
	classes.add(Math.floor(response.status / 100));
	seen.set(path, classes);
	return { status: response.status, text: await response.text() };
}

/**
 * Two requests in three carry an Idempotency-Key from a small pool, so bodies are fingerprinted,
 * keys are reused with other bodies (422) and identical repeats are replayed.
 */
function idempotencyHeader(): Record<string, string> {
	sent += 1;
	return sent % 3 === 0 ? {} : { 'idempotency-key': `fuzz-${sent % 7}-${server.origin}` };
}

/** The property every answer must have. */
function expectWellFormed({ status, text }: { status: number; text: string }): void {
	if (status >= 200 && status < 300) return;
	if (status < 400 || status >= 500) throw new Error(`answered ${status}: ${text}`);
	const body = JSON.parse(text) as { error: { message: string; type: string; code: string; param: unknown } };
	expect(body.error.message.length).toBeGreaterThan(0);
	expect(typeof body.error.type).toBe('string');
	expect(typeof body.error.code).toBe('string');
	expect(body.error.param === null || typeof body.error.param === 'string').toBe(true);
}

const refusedUrls = ['http://127.0.0.1:9/a.png', 'http://10.0.0.1/x.png', 'http://169.254.169.254/latest/meta-data', 'http://[::1]/a', 'http://0x7f000001/a.png'];
const text = fc.oneof(fc.string({ unit: 'binary', maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 40 }), fc.constant('x'.repeat(10_001)), fc.constant(''), fc.constant('\u202Eevil\uD800'));
const junk = fc.oneof(
	text,
	fc.integer(),
	fc.double(),
	fc.constantFrom(1e308, -0, Number.MAX_SAFE_INTEGER + 2, null, true, false),
	fc.array(fc.anything({ maxDepth: 2 }), { maxLength: 4 }),
	fc.object({ maxDepth: 3 }),
	fc.letrec((tie) => ({ deep: fc.oneof({ depthSize: 'small' }, fc.constant(1), fc.array(tie('deep'), { maxLength: 2 })) })).deep,
);
// The image exists only once beforeAll has run: read it when a value is drawn, not when defined.
const realImage = fc.constantFrom('raw', 'uri').map((form) => (form === 'raw' ? png : `data:image/png;base64,${png}`));
const mediaValue = fc.oneof(
	realImage,
	fc.constantFrom(...refusedUrls),
	fc.constantFrom('data:image/png;base64,%%%', 'data:,', 'data:image/png,abc', 'bm90IGFuIGltYWdl', 'AAAA', '====', 'javascript:alert(1)', 'file:///etc/passwd'),
	fc.string({ unit: 'binary', maxLength: 64 }),
	junk,
);
const field = (name: string, value: fc.Arbitrary<unknown>) => fc.option(value.map((v) => ({ [name]: v })), { nil: {} });

const validGeneration = fc.record({
	model: fc.constantFrom('p-image', 'textimage-v2'),
	prompt: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 60 }).filter((p) => p.trim().length > 0),
	aspect_ratio: fc.constantFrom('1:1', '16:9', '3:4'),
	response_format: fc.constantFrom('url', 'b64_json'),
});
const mutatedGeneration = fc
	.tuple(
		fc.oneof(fc.constantFrom('p-image', 'p-image-edit', 'textimage-v2'), junk),
		field('prompt', fc.oneof(fc.constant('a fox'), text, junk)),
		field('images', fc.oneof(fc.array(mediaValue, { maxLength: 12 }), mediaValue)),
		field('aspect_ratio', fc.oneof(fc.constantFrom('1:1', '16:9', '3:1', '0:0', '1:1 '), junk)),
		field('output_format', fc.oneof(fc.constantFrom('png', 'jpeg', 'webp', 'gif'), junk)),
		field('response_format', fc.oneof(fc.constantFrom('url', 'b64_json'), junk)),
		field('negative_prompt', fc.oneof(text, junk)),
		field('style_type', fc.oneof(fc.constantFrom('AUTO', 'ANIME', 'anime'), junk)),
		field('magic_prompt_option', fc.oneof(fc.constantFrom('ON', 'OFF'), junk)),
		fc.option(fc.dictionary(fc.string({ maxLength: 12 }), junk, { maxKeys: 2 }), { nil: {} }),
	)
	.map(([model, ...parts]) => Object.assign({ model }, ...parts) as Record<string, unknown>);
const generationBody = fc.oneof({ arbitrary: mutatedGeneration, weight: 4 }, { arbitrary: validGeneration as fc.Arbitrary<Record<string, unknown>>, weight: 1 });

const validUpload = fc.record(
	{ image: realImage, output_format: fc.constantFrom('webp', 'png', 'jpg') },
	{ requiredKeys: ['image'] },
);
const mutatedUpload = fc
	.tuple(field('image', mediaValue), field('video', mediaValue), field('output_format', fc.oneof(fc.constantFrom('webp', 'png', 'jpg', 'tiff'), junk)), fc.option(fc.dictionary(fc.string({ maxLength: 8 }), junk, { maxKeys: 2 }), { nil: {} }))
	.map((parts) => Object.assign({}, ...parts) as Record<string, unknown>);
const uploadBody = fc.oneof({ arbitrary: mutatedUpload, weight: 4 }, { arbitrary: validUpload as fc.Arbitrary<Record<string, unknown>>, weight: 1 });

describe.each(CONFIGURATIONS)('%s', (_name, start, runs) => {
	let stop: () => Promise<void>;
	beforeAll(async () => {
		seen.clear();
		({ server, stop } = await start());
	}, 120_000);
	afterAll(() => stop?.());

	test('generation bodies: random and mutated', async () => {
		await fc.assert(
			fc.asyncProperty(generationBody, async (body) => expectWellFormed(await send('/images/generations', JSON.stringify(body), 'application/json'))),
			{ numRuns: runs },
		);
	}, 120_000);

	test('upload JSON bodies: random and mutated', async () => {
		await fc.assert(
			fc.asyncProperty(uploadBody, async (body) => expectWellFormed(await send('/uploads', JSON.stringify(body), 'application/json'))),
			{ numRuns: runs },
		);
	}, 120_000);

	test('raw bodies: garbage bytes, broken JSON, wrong content types', async () => {
		const body = fc.oneof(fc.uint8Array({ maxLength: 300 }), fc.string({ unit: 'binary', maxLength: 200 }).map((s) => new TextEncoder().encode(s)), fc.constantFrom('{', '[]', 'null', '"x"', '{"model":', '{"__proto__":{"x":1}}').map((s) => new TextEncoder().encode(s)));
		const contentType = fc.constantFrom('application/json', 'text/plain', 'application/octet-stream', 'multipart/form-data', 'application/json; charset=utf-16', 'image/png');
		await fc.assert(
			fc.asyncProperty(fc.constantFrom('/images/generations', '/uploads'), body, contentType, async (path, bytes, type) => expectWellFormed(await send(path, bytes, type))),
			{ numRuns: runs },
		);
	}, 120_000);

	test('multipart uploads: truncated, missing parts, wrong names, duplicate fields, random file bytes', async () => {
		const part = fc.oneof(
			fc.record({ name: fc.constantFrom('file', 'image', 'video', 'other', '__proto__'), bytes: fc.oneof(fc.constant(Buffer.from(png, 'base64')), fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)), fc.constant(Buffer.alloc(0))), file: fc.constant(true) }),
			fc.record({ name: fc.constantFrom('output_format', 'file', 'x'), bytes: fc.constantFrom('webp', 'png', 'jpg', 'bmp', '').map((s) => Buffer.from(s)), file: fc.constant(false) }),
		);
		const form = fc.record({ parts: fc.array(part, { maxLength: 4 }), cut: fc.option(fc.nat(), { nil: undefined }), boundaryInHeader: fc.constantFrom('b0undary', 'other', '') });
		await fc.assert(
			fc.asyncProperty(form, async ({ parts, cut, boundaryInHeader }) => {
				const chunks = parts.map((p) =>
					Buffer.concat([
						Buffer.from(`--b0undary\r\nContent-Disposition: form-data; name="${p.name}"${p.file ? '; filename="f.bin"\r\nContent-Type: application/octet-stream' : ''}\r\n\r\n`),
						p.bytes,
						Buffer.from('\r\n'),
					]),
				);
				let bytes = Buffer.concat([...chunks, Buffer.from('--b0undary--\r\n')]);
				if (cut !== undefined) bytes = bytes.subarray(0, cut % (bytes.length + 1));
				const type = boundaryInHeader ? `multipart/form-data; boundary=${boundaryInHeader}` : 'multipart/form-data';
				expectWellFormed(await send('/uploads', bytes, type));
			}),
			{ numRuns: runs },
		);
	}, 120_000);

	test('both endpoints answered successes as well as refusals', () => {
		expect([...(seen.get('/images/generations') ?? [])].sort()).toEqual([2, 4]);
		expect([...(seen.get('/uploads') ?? [])].sort()).toEqual([2, 4]);
	});

	test('after all of it the server is alive and healthy', async () => {
		expect(server.process.exitCode).toBeNull();
		expect((await fetch(`${server.origin}/healthz`)).status).toBe(200);
	});
});

test('image bombs (decompression bombs, huge declared dimensions) as uploads and as edit inputs', async () => {
	const bombs = await Promise.all([pngBomb(), jpegDeclaring(), webpDeclaring(), gifDeclaring(), pngBomb(40_000, 4_000)]);
	const formats = ['png', 'jpg', 'webp', 'gif', 'png'];
	const bombIndex = fc.nat({ max: bombs.length - 1 });
	const bomb = bombIndex.map((index) => bombs[index]!);
	const decodes = fc.oneof(
		fc.record({ output_format: fc.constantFrom('jpg', 'png', 'webp') }),
		fc.record({ max_side: fc.integer({ min: 16, max: 4096 }) }),
		fc.record({ max_bytes: fc.integer({ min: 10_240, max: 1_000_000 }), output_format: fc.constantFrom('jpg', 'webp') }),
	);
	// Its own server: the shared one's rate limit is spent by the tests above.
	const bombed = await startServer({ args: ['--rate-limit-per-minute', '0'] });
	const post = async (path: string, body: string | FormData, contentType?: string) => {
		const response = await fetch(`${bombed.baseUrl}${path}`, {
			method: 'POST',
			headers: { authorization: `Bearer ${bombed.apiKey}`, ...(contentType ? { 'content-type': contentType } : {}) },
			body,
			signal: AbortSignal.timeout(15_000),
		});
		return { status: response.status, text: await response.text() };
	};
	const tooLarge = (answer: { status: number; text: string }, param: string) => {
		expectWellFormed(answer);
		expect(answer.status).toBe(400);
		expect(JSON.parse(answer.text).error).toMatchObject({ code: 'image_too_large', param });
	};
	try {
		await fc.assert(
			fc.asyncProperty(bombIndex, decodes, fc.boolean(), async (index, options, multipart) => {
				const bytes = bombs[index]!;
				// Already in the wanted format and nothing to fit: hosted as is, never decoded.
				if (Object.keys(options).join() === 'output_format' && (options as { output_format: string }).output_format === formats[index]) return;
				if (multipart) {
					const form = new FormData();
					for (const [name, value] of Object.entries(options)) form.append(name, String(value));
					form.append('file', new Blob([bytes]), 'bomb.bin');
					tooLarge(await post('/uploads', form), 'file');
				} else {
					tooLarge(await post('/uploads', JSON.stringify({ image: bytes.toString('base64'), ...options }), 'application/json'), 'image');
				}
			}),
			{ numRuns: 40 },
		);
		await fc.assert(
			fc.asyncProperty(fc.array(fc.oneof(bomb, fc.constant(Buffer.from(png, 'base64'))), { minLength: 1, maxLength: 4 }), async (inputs) => {
				const first = inputs.findIndex((input) => input.toString('base64') !== png);
				const body = { model: 'p-image-edit', prompt: 'x', images: inputs.map((input) => input.toString('base64')), response_format: 'b64_json' };
				const answer = await post('/images/generations', JSON.stringify(body), 'application/json');
				if (first < 0) expect(answer.status).toBe(200);
				else tooLarge(answer, `images[${first}]`);
			}),
			{ numRuns: 40 },
		);
		expect((await fetch(`${bombed.origin}/healthz`)).status).toBe(200);
	} finally {
		await bombed.stop({ removeData: true });
	}
}, 180_000);
