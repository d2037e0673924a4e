// The invisible watermark (server/src/provenance/watermark/) on its own, no HTTP: sandbox renders
// of every catalog aspect ratio, marked and served as PNG, JPEG or WebP (the sandbox's own
// encodings), then changed as platforms change images; per change, the share in which the mark is
// still found with its payload. Also: PSNR of each marked image against the same render unmarked,
// false positives over images nobody marked (sandbox renders, noise, gradients, flat colours,
// screenshot-like text, the photos in node_modules), and the CPU time of marking and reading.
// `node bench/watermark.mjs [dist] [--images N] [--photos N] [--unmarked N]` runs it alone, against another
// build's dist if given (the default is server/dist, which `npm run build` makes).
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { ROOT, round } from './lib.mjs';

const PROMPTS = [
	'A lighthouse at dawn over a calm sea',
	'Portrait of an old fisherman, soft window light',
	'Isometric city block at night with neon signs',
	'A bowl of ramen, steam rising, top view',
	'Logo for a coffee shop called Bean There',
	'Mountain lake reflecting autumn trees',
	'A robot reading a newspaper in a park',
	'Watercolour map of an imaginary island',
	'Close-up of a hummingbird drinking nectar',
	'Minimalist poster: SUMMER SALE 50% OFF',
	'Desert highway under a starry sky',
	'A cat wearing a tiny knitted hat',
];
/** The photos node_modules holds (a street scene, a red stamp on white), where installed. */
const PHOTOS = ['node_modules/autocannon/test/j5.jpeg', 'node_modules/@fastify/static/example/public/images/sample.jpg'];
const STYLES = ['AUTO', 'GENERAL', 'REALISTIC', 'DESIGN', 'RENDER_3D', 'ANIME'];
const FORMATS = ['png', 'jpeg', 'webp'];
/** How the sandbox encodes (sandbox-render.ts): what a marked image is served as. */
const SERVED = { png: (image) => image.png(), jpeg: (image) => image.jpeg({ quality: 90 }), webp: (image) => image.webp({ quality: 90 }) };
/** sharp's defaults for the format: what a platform that re-saves an image does to it. */
const RESAVED = { png: (image) => image.png(), jpeg: (image) => image.jpeg(), webp: (image) => image.webp() };

const longSide = (bytes, size) =>
	sharp(bytes).resize({ width: size, height: size, fit: 'inside' });

/** The changes, each from the served bytes and their format to new bytes. `target`: held to ≥ 99 %. */
const ATTACKS = [
	{ name: 'as served', target: true, apply: async (bytes) => bytes },
	{ name: 'metadata stripped (re-saved by sharp, same format)', target: true, apply: (bytes, format) => RESAVED[format](sharp(bytes)).toBuffer() },
	{ name: 'JPEG q75', target: true, apply: (bytes) => sharp(bytes).jpeg({ quality: 75 }).toBuffer() },
	{ name: 'WebP q80', target: true, apply: (bytes) => sharp(bytes).webp({ quality: 80 }).toBuffer() },
	{ name: 'resized to half', target: true, apply: async (bytes, format, { width }) => RESAVED[format](sharp(bytes).resize(Math.round(width / 2))).toBuffer() },
	{ name: 'brightness +15 %', target: true, apply: (bytes, format) => RESAVED[format](sharp(bytes).modulate({ brightness: 1.15 })).toBuffer() },
	{ name: 'brightness −15 %', target: true, apply: (bytes, format) => RESAVED[format](sharp(bytes).modulate({ brightness: 0.85 })).toBuffer() },
	{ name: '768 px + JPEG q80', target: true, apply: (bytes) => longSide(bytes, 768).jpeg({ quality: 80 }).toBuffer() },
	{ name: 'half + brightness +15 % + JPEG q75', target: false, apply: async (bytes, format, { width }) => sharp(bytes).resize(Math.round(width / 2)).modulate({ brightness: 1.15 }).jpeg({ quality: 75 }).toBuffer() },
	{ name: 'JPEG q50', target: false, apply: (bytes) => sharp(bytes).jpeg({ quality: 50 }).toBuffer() },
	{ name: 'resized to a quarter', target: false, apply: async (bytes, format, { width }) => RESAVED[format](sharp(bytes).resize(Math.round(width / 4))).toBuffer() },
	{ name: 'crop 2 % (each side 1 %)', target: false, apply: (bytes, format, size) => RESAVED[format](crop(bytes, size, 0.02)).toBuffer() },
	{ name: 'crop 10 % (each side 5 %)', target: false, apply: (bytes, format, size) => RESAVED[format](crop(bytes, size, 0.1)).toBuffer() },
	{ name: 'rotation 90°', target: false, apply: (bytes, format) => RESAVED[format](sharp(bytes).rotate(90)).toBuffer() },
	{ name: 'rotation 5°', target: false, apply: (bytes, format) => RESAVED[format](sharp(bytes).rotate(5, { background: '#808080' })).toBuffer() },
];

function crop(bytes, { width, height }, share) {
	const left = Math.round((width * share) / 2);
	const top = Math.round((height * share) / 2);
	return sharp(bytes).extract({ left, top, width: width - 2 * left, height: height - 2 * top });
}

const task = { signal: new AbortController().signal, limitInputPixels: 1e8, timeoutSeconds: () => 60, throwIfStopped() {} };

async function raw(bytes) {
	const { data, info } = await sharp(bytes).raw().toBuffer({ resolveWithObject: true });
	return { data, info: { width: info.width, height: info.height, channels: info.channels } };
}

function psnr(a, b) {
	let squares = 0;
	for (let i = 0; i < a.length; i++) squares += (a[i] - b[i]) ** 2;
	return squares === 0 ? Infinity : 10 * Math.log10((255 * 255 * a.length) / squares);
}

const cpuMs = () => {
	const { user, system } = process.cpuUsage();
	return (user + system) / 1000;
};

/** Sandbox render `index` of the run: every aspect ratio in turn, prompts, styles and seeds varied. */
async function render(mod, index, seedOffset = 0) {
	const ratios = mod.EXTENDED_ASPECT_RATIOS;
	const aspectRatio = ratios[index % ratios.length];
	const scene = {
		model: index % 2 ? 'textimage-v2' : 'p-image',
		prompt: PROMPTS[Math.floor(index / ratios.length) % PROMPTS.length],
		...mod.dimensionsFor(aspectRatio),
		styleType: STYLES[index % STYLES.length],
		seed: 1000 + index + seedOffset,
		inputs: [],
	};
	return { aspectRatio, pixels: await raw(await mod.renderSandboxImage(scene, 'png', task)) };
}

function sameBytes(a, b) {
	return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

/** Marks `images` pictures (`picture(index)` makes each); per attack, how many are found with their payload; PSNR; CPU time. */
async function markedRun(mod, images, picture) {
	const found = new Map(ATTACKS.map(({ name }) => [name, { found: 0, wrong: 0, missedByFormat: { png: 0, jpeg: 0, webp: 0 } }]));
	const psnrs = [];
	const servedPsnrs = [];
	for (let index = 0; index < images; index++) {
		const pixels = await picture(index);
		const payload = randomBytes(8);
		const marked = mod.embedWatermark(pixels, payload);
		psnrs.push(psnr(pixels.data, marked.data));
		const format = FORMATS[index % FORMATS.length];
		const served = await SERVED[format](sharp(marked.data, { raw: marked.info })).toBuffer();
		const unmarkedServed = await SERVED[format](sharp(pixels.data, { raw: pixels.info })).toBuffer();
		servedPsnrs.push(psnr((await raw(served)).data, (await raw(unmarkedServed)).data));
		for (const attack of ATTACKS) {
			const reading = mod.detectWatermark(await raw(await attack.apply(served, format, pixels.info)));
			const tally = found.get(attack.name);
			if (reading.found && sameBytes(reading.payload, payload)) tally.found++;
			else if (reading.found) tally.wrong++;
			else tally.missedByFormat[format]++;
		}
	}
	return { found, psnrs, servedPsnrs, images };
}

/** Pictures nobody marked, `count` in all, of every kind: each yields its raw pixels. */
async function* unmarkedImages(mod, count) {
	const photos = PHOTOS.map((path) => join(ROOT, path)).filter(existsSync);
	const kinds = [
		(i) => render(mod, i, 50_000).then(({ pixels }) => pixels),
		(i) => noise(i),
		(i) => gradient(i),
		(i) => sharp({ create: { width: 256 + ((i * 97) % 900), height: 256 + ((i * 61) % 900), channels: 3, background: { r: (i * 37) % 256, g: (i * 91) % 256, b: (i * 53) % 256 } } }).png().toBuffer().then(raw),
		(i) => screenshot(i),
		...(photos.length ? [(i) => photo(photos[i % photos.length], i)] : []),
	];
	for (let i = 0; i < count; i++) yield { kind: ['render', 'noise', 'gradient', 'flat', 'screenshot', 'photo'][i % kinds.length], pixels: await kinds[i % kinds.length](Math.floor(i / kinds.length)) };
}

function sizeOf(i) {
	return { width: 256 + ((i * 131) % 1300), height: 256 + ((i * 71) % 1100) };
}

async function noise(i) {
	const { width, height } = sizeOf(i);
	const image = i % 2 ? sharp({ create: { width, height, channels: 3, noise: { type: 'gaussian', mean: 128, sigma: 10 + (i % 60) } } }) : sharp(randomBytes(width * height * 3), { raw: { width, height, channels: 3 } });
	return raw(await image.png().toBuffer());
}

async function gradient(i) {
	const { width, height } = sizeOf(i);
	const colour = (k) => `hsl(${(i * 47 + k * 120) % 360}, ${30 + (i % 60)}%, ${20 + ((i * 7) % 60)}%)`;
	const shape = i % 2
		? `<linearGradient id="g" x1="0" y1="0" x2="${(i % 5) / 4}" y2="1"><stop offset="0" stop-color="${colour(0)}"/><stop offset="1" stop-color="${colour(1)}"/></linearGradient>`
		: `<radialGradient id="g"><stop offset="0" stop-color="${colour(0)}"/><stop offset="1" stop-color="${colour(2)}"/></radialGradient>`;
	return raw(await sharp(Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><defs>${shape}</defs><rect width="100%" height="100%" fill="url(#g)"/></svg>`)).removeAlpha().png().toBuffer());
}

async function screenshot(i) {
	const { width, height } = sizeOf(i);
	const dark = i % 3 === 0;
	const size = 11 + (i % 10);
	const lines = Array.from({ length: Math.floor(height / (size * 1.6)) }, (_, line) =>
		`<text x="${12 + (line % 4) * size}" y="${(line + 1) * size * 1.6}" font-family="DejaVu Sans Mono, monospace" font-size="${size}" fill="${dark ? '#d4d4d4' : '#1f2328'}">${`const value${line} = compute(${line * i}, "row ${line}"); // ${'lorem ipsum dolor sit amet '.repeat(3)}`.slice(0, Math.floor(width / (size * 0.62)))}</text>`,
	).join('');
	const bar = `<rect width="100%" height="${size * 2.4}" fill="${dark ? '#3c3c3c' : '#f3f3f3'}"/>`;
	return raw(await sharp(Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><rect width="100%" height="100%" fill="${dark ? '#1e1e1e' : '#ffffff'}"/>${bar}${lines}</svg>`)).removeAlpha().png().toBuffer());
}

/** A photo, at a scale and crop of its own for each `i` (its long side `size` if given): a different picture each time. */
async function photo(path, i, size) {
	const image = sharp(path);
	const { width, height } = await image.metadata();
	const share = 0.5 + ((i * 13) % 50) / 100;
	const cut = { left: Math.floor(((i * 29) % 100) / 100 * width * (1 - share)), top: Math.floor(((i * 43) % 100) / 100 * height * (1 - share)), width: Math.floor(width * share), height: Math.floor(height * share) };
	const scale = 0.6 + ((i * 17) % 90) / 100;
	const resized = size ? image.extract(cut).resize(size, size, { fit: 'inside' }) : image.extract(cut).resize(Math.max(256, Math.round(cut.width * scale)));
	return raw(await resized.removeAlpha().png().toBuffer());
}

async function unmarkedRun(mod, count) {
	const byKind = {};
	let detectMs = 0;
	let tooSmall = 0;
	for await (const { kind, pixels } of unmarkedImages(mod, count)) {
		const started = cpuMs();
		const reading = mod.detectWatermark(pixels);
		detectMs += cpuMs() - started;
		byKind[kind] ??= { images: 0, found: 0 };
		byKind[kind].images++;
		if (reading.found) byKind[kind].found++;
		if (!reading.found && reading.reason === 'too_small') tooSmall++;
	}
	return { byKind, falsePositives: Object.values(byKind).reduce((sum, k) => sum + k.found, 0), images: count, tooSmall, detectMsPerImage: detectMs / count };
}

/**
 * CPU time (all the process's threads) of marking a 1024 × 1024 render, in place and as a copy, and
 * of reading it from its pixels and from a served PNG and JPEG (decoding included): the mean of
 * `rounds` after as many to warm up, since V8 compiles the per-pixel loops in tiers over the first
 * calls and a running service marks in the steady state that follows.
 */
async function timings(mod, rounds = 20) {
	const { pixels } = await render(mod, 0);
	const megapixels = (pixels.info.width * pixels.info.height) / 1e6;
	const cpuOf = async (work) => {
		for (let i = 0; i < rounds; i++) await work(i);
		const started = cpuMs();
		for (let i = rounds; i < 2 * rounds; i++) await work(i);
		return (cpuMs() - started) / rounds;
	};
	const copies = Array.from({ length: 2 * rounds }, () => ({ data: Buffer.from(pixels.data), info: pixels.info }));
	const inPlaceMs = await cpuOf((i) => mod.embedWatermarkInPlace(copies[i], randomBytes(8)));
	const copyMs = await cpuOf(() => mod.embedWatermark(pixels, randomBytes(8)));
	const marked = mod.embedWatermark(pixels, randomBytes(8));
	const png = await SERVED.png(sharp(marked.data, { raw: marked.info })).toBuffer();
	const jpeg = await SERVED.jpeg(sharp(marked.data, { raw: marked.info })).toBuffer();
	return {
		megapixels,
		embedInPlaceMsPerMegapixel: round(inPlaceMs / megapixels),
		embedCopyMsPerMegapixel: round(copyMs / megapixels),
		detectFromPixelsMs: round(await cpuOf(() => mod.detectWatermark(marked))),
		detectFromPngMs: round(await cpuOf(() => mod.detectWatermarkInImage(png))),
		detectFromJpegMs: round(await cpuOf(() => mod.detectWatermarkInImage(jpeg))),
	};
}

export async function watermarkBench({ dist = join(ROOT, 'server', 'dist'), images = 132, photoImages = 12, unmarked = 1000 } = {}) {
	const load = createRequire(join(dist, 'server', 'src', 'index.js'));
	const mod = {
		...load('./provenance/watermark/embed.js'),
		...load('./provenance/watermark/detect.js'),
		...load('./provenance/watermark/encoded-image.js'),
		...load('./generation/providers/sandbox-render.js'),
		...load('../../core/models.js'),
	};
	const marked = await markedRun(mod, images, async (index) => (await render(mod, index)).pixels);
	const photoPaths = PHOTOS.map((path) => join(ROOT, path)).filter(existsSync);
	const photos = photoPaths.length ? await markedRun(mod, photoImages, (index) => photo(photoPaths[index % photoPaths.length], index, 1024)) : undefined;
	const nobody = await unmarkedRun(mod, unmarked);
	const times = await timings(mod);
	const sorted = (values) => [...values].sort((a, b) => a - b);
	const rates = ATTACKS.map(({ name, target }) => ({ name, target, ...marked.found.get(name), rate: marked.found.get(name).found / images }));
	return {
		images,
		rates,
		psnrMinDb: round(sorted(marked.psnrs)[0]),
		psnrMedianDb: round(sorted(marked.psnrs)[images >> 1]),
		servedPsnrMinDb: round(sorted(marked.servedPsnrs)[0]),
		photos: photos && { images: photoImages, rates: ATTACKS.map(({ name }) => ({ name, ...photos.found.get(name), rate: photos.found.get(name).found / photoImages })), psnrMinDb: round(Math.min(...photos.psnrs)) },
		unmarked: nobody,
		timings: times,
	};
}

function option(name, fallback) {
	const at = process.argv.indexOf(name);
	return at < 0 ? fallback : Number(process.argv[at + 1]);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
	const dist = process.argv[2] && !process.argv[2].startsWith('--') ? process.argv[2] : undefined;
	const result = await watermarkBench({ ...(dist ? { dist } : {}), images: option('--images', 132), photoImages: option('--photos', 12), unmarked: option('--unmarked', 1000) });
	for (const r of result.rates) console.log(`${r.name.padEnd(44)} ${String(r.found).padStart(4)} / ${result.images}  ${(100 * r.rate).toFixed(1).padStart(5)} %  missed ${JSON.stringify(r.missedByFormat)}${r.wrong ? `  (${r.wrong} wrong payloads)` : ''}${r.target ? (r.rate >= 0.99 ? '  target met' : '  TARGET MISSED') : ''}`);
	if (result.photos) for (const r of result.photos.rates) console.log(`photos: ${r.name.padEnd(44)} ${String(r.found).padStart(3)} / ${result.photos.images}  missed ${JSON.stringify(r.missedByFormat)}`);
	if (result.photos) console.log(`photos: PSNR min ${result.photos.psnrMinDb} dB`);
	console.log(`PSNR min / median ${result.psnrMinDb} / ${result.psnrMedianDb} dB (as served, against the same render served unmarked: min ${result.servedPsnrMinDb} dB)`);
	console.log(`false positives ${result.unmarked.falsePositives} / ${result.unmarked.images} (${JSON.stringify(result.unmarked.byKind)}; too small to read: ${result.unmarked.tooSmall})`);
	const t = result.timings;
	console.log(`CPU: embedding ${t.embedInPlaceMsPerMegapixel} ms per megapixel in place, ${t.embedCopyMsPerMegapixel} ms as a copy; detection (${t.megapixels} MP) ${t.detectFromPixelsMs} ms from pixels, ${t.detectFromPngMs} ms from a PNG, ${t.detectFromJpegMs} ms from a JPEG (decoding included)`);
	console.log(JSON.stringify(result));
}
