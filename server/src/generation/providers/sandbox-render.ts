/**
 * The sandbox renderer: a deterministic picture of the request itself. It is a stand-in for
 * development and tests (offline, free, reproducible), not an image model: the same request with
 * the same seed always gives the same bytes, another seed other colours and shapes, and what was
 * asked for (prompt, model, style, input images) is visible.
 */
import { createHash } from 'node:crypto';
import type { OutputInfo } from 'sharp';
import { invalidField } from '../../../../core/errors';
import { imageTooLarge, isPixelLimitError } from '../../media/image-header';
import type { ImageTask } from '../../media/image-work';
import sharp from '../../media/sharp';
import type { ImageOutputFormat, StyleType } from '../../../../core/models';

interface SandboxScene {
	model: string;
	prompt: string;
	width: number;
	height: number;
	styleType?: StyleType;
	negativePrompt?: string;
	magicPromptOption?: string;
	seed: number;
	/** Input images (p-image-edit), drawn transformed as tiles under the caption (see MOSAIC_BLOCKS). */
	inputs: Buffer[];
}

interface Palette {
	background: [string, string];
	accents: string[];
}

const STYLE_LOOK: Record<StyleType, { saturation: number; lightness: number }> = {
	AUTO: { saturation: 60, lightness: 55 },
	GENERAL: { saturation: 55, lightness: 55 },
	REALISTIC: { saturation: 25, lightness: 50 },
	DESIGN: { saturation: 80, lightness: 60 },
	RENDER_3D: { saturation: 65, lightness: 45 },
	ANIME: { saturation: 95, lightness: 65 },
};

/** Colours derived from a hash of what was asked, so different prompts look different. */
function paletteFor(scene: SandboxScene, seed: Buffer): Palette {
	const look = STYLE_LOOK[scene.styleType ?? 'AUTO'];
	const hue = (index: number) => Math.round((seed.readUInt16BE(index * 2) / 65_536) * 360);
	const colour = (index: number, lightnessShift = 0) =>
		`hsl(${hue(index)}, ${look.saturation}%, ${Math.max(10, Math.min(90, look.lightness + lightnessShift))}%)`;
	return {
		background: [colour(0, -20), colour(1, 10)],
		accents: [colour(2), colour(3, 15), colour(4, -10), colour(5, 5)],
	};
}

/**
 * Characters XML 1.0 cannot carry at all (C0 controls other than tab and line breaks, DEL and C1
 * controls, U+FFFE/U+FFFF): librsvg refuses the whole drawing over one of them, so they are dropped.
 */
const NOT_XML = /[\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F\uFFFE\uFFFF]/g;

function escapeXml(text: string): string {
	return text.replace(NOT_XML, '').replace(/[<>&'"]/g, (char) => `&#${char.charCodeAt(0)};`);
}

/** Greedy word wrap; very long words are cut so nothing runs off the canvas. */
function wrap(text: string, maxChars: number, maxLines: number): string[] {
	const lines: string[] = [];
	let line = '';
	for (const word of text.replace(NOT_XML, '').replace(/\s+/g, ' ').trim().split(' ')) {
		const piece = word.length > maxChars ? `${word.slice(0, maxChars - 1)}…` : word;
		if (line && line.length + 1 + piece.length > maxChars) {
			lines.push(line);
			line = piece;
		} else {
			line = line ? `${line} ${piece}` : piece;
		}
		if (lines.length === maxLines) break;
	}
	if (line && lines.length < maxLines) lines.push(line);
	if (lines.length === maxLines && text.length > lines.join(' ').length) {
		lines[maxLines - 1] = `${lines[maxLines - 1]!.slice(0, maxChars - 1)}…`;
	}
	return lines;
}

function shapes(scene: SandboxScene, seed: Buffer, palette: Palette): string {
	const { width, height } = scene;
	const unit = Math.min(width, height);
	const out: string[] = [];
	for (let i = 0; i < 6; i++) {
		const x = (seed[8 + i]! / 255) * width;
		const y = (seed[14 + i]! / 255) * height;
		const size = unit * (0.12 + (seed[20 + i]! / 255) * 0.3);
		const fill = palette.accents[i % palette.accents.length]!;
		switch (scene.styleType) {
			case 'DESIGN':
				out.push(`<rect x="${x - size / 2}" y="${y - size / 2}" width="${size}" height="${size * 0.6}" fill="${fill}"/>`);
				break;
			case 'RENDER_3D':
				out.push(`<circle cx="${x}" cy="${y}" r="${size / 2}" fill="url(#sphere${i % 2})"/>`);
				break;
			case 'ANIME':
				out.push(`<path d="M${x} ${y - size / 2} L${x + size / 2} ${y + size / 2} L${x - size / 2} ${y + size / 2} Z" fill="${fill}" opacity="0.85"/>`);
				break;
			default:
				out.push(`<circle cx="${x}" cy="${y}" r="${size / 2}" fill="${fill}" opacity="${scene.styleType === 'REALISTIC' ? 0.35 : 0.7}"/>`);
		}
	}
	return out.join('');
}

function background(scene: SandboxScene, seed: Buffer, palette: Palette): string {
	const [from, to] = palette.background;
	return (
		`<defs><linearGradient id="bg" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="${from}"/><stop offset="1" stop-color="${to}"/></linearGradient>` +
		`<radialGradient id="sphere0" cx="0.35" cy="0.35"><stop offset="0" stop-color="#fff"/><stop offset="1" stop-color="${palette.accents[0]}"/></radialGradient>` +
		`<radialGradient id="sphere1" cx="0.35" cy="0.35"><stop offset="0" stop-color="#fff"/><stop offset="1" stop-color="${palette.accents[1]}"/></radialGradient></defs>` +
		`<rect width="100%" height="100%" fill="url(#bg)"/>${scene.inputs.length ? '' : shapes(scene, seed, palette)}`
	);
}

function editNote(inputs: number): string {
	if (inputs === 0) return '';
	return inputs === 1 ? ' · the input as a tinted mosaic' : ` · ${inputs} inputs as tinted mosaics`;
}

function caption(scene: SandboxScene): string {
	const { width, height } = scene;
	const fontSize = Math.round(Math.min(width, height) / 22);
	const maxChars = Math.max(12, Math.floor(width / (fontSize * 0.6)) - 4);
	const lines = wrap(scene.prompt, maxChars, 5);
	const notes = [
		`sandbox · ${scene.model}${scene.styleType ? ` · ${scene.styleType}` : ''}${scene.magicPromptOption ? ` · magic ${scene.magicPromptOption}` : ''}${editNote(scene.inputs.length)}`,
		...(scene.negativePrompt ? [`without: ${wrap(scene.negativePrompt, maxChars, 1)[0]}`] : []),
	];
	const lineHeight = Math.round(fontSize * 1.3);
	const boxHeight = lineHeight * (lines.length + notes.length) + fontSize;
	const top = height - boxHeight;
	const text = [...lines.map((line) => ({ line, size: fontSize, weight: 'bold' })), ...notes.map((line) => ({ line, size: Math.round(fontSize * 0.7), weight: 'normal' }))]
		.map(
			({ line, size, weight }, i) =>
				`<text x="${fontSize}" y="${top + fontSize + i * lineHeight}" font-family="DejaVu Sans, sans-serif" font-size="${size}" font-weight="${weight}" fill="#fff">${escapeXml(line)}</text>`,
		)
		.join('');
	return `<rect x="0" y="${top - fontSize / 2}" width="${width}" height="${boxHeight + fontSize / 2}" fill="#000" opacity="0.45"/>${text}`;
}

/**
 * An edit's picture is its inputs, visibly transformed: each one fitted to its tile as a mosaic of
 * blocks a 36th of the input's own short side, tinted in the palette's first accent.
 * The input stays recognisable (its layout and light), and any text in it becomes blocks: a
 * sandbox image's caption (letters of a 22nd of the short side) is wider than a 36th, so the only
 * legible caption is the edit's, however small the tile.
 */
const MOSAIC_BLOCKS = 36;

/** Input images as a grid of tiles covering the canvas; one that cannot be decoded is the client's 400. */
async function tiles(scene: SandboxScene, tint: string, task: ImageTask): Promise<string> {
	const count = scene.inputs.length;
	const columns = Math.ceil(Math.sqrt(count));
	const rows = Math.ceil(count / columns);
	const tileWidth = Math.floor(scene.width / columns);
	const tileHeight = Math.floor(scene.height / rows);
	const drawn = await Promise.all(
		scene.inputs.map(async (input, index) => {
			const png = await mosaicTile(input, `images[${index}]`, { width: tileWidth, height: tileHeight, tint }, task);
			const [left, top] = [(index % columns) * tileWidth, Math.floor(index / columns) * tileHeight];
			return `<image x="${left}" y="${top}" width="${tileWidth}" height="${tileHeight}" image-rendering="pixelated" href="data:image/png;base64,${png.toString('base64')}"/>`;
		}),
	);
	return drawn.join('');
}

/**
 * How many blocks across and down a tile's mosaic has: blocks are a MOSAIC_BLOCKS-th of the input's
 * short side, over the part of the input the tile shows (the input cropped to the tile's ratio).
 * So the grid follows the tile's shape, however long and thin the input.
 */
export function mosaicGrid(input: { width: number; height: number }, tile: { width: number; height: number }): { columns: number; rows: number } {
	const block = Math.min(input.width, input.height) / MOSAIC_BLOCKS;
	const tileRatio = tile.width / tile.height;
	const shown = input.width / input.height > tileRatio ? { width: input.height * tileRatio, height: input.height } : { width: input.width, height: input.width / tileRatio };
	return { columns: Math.max(1, Math.round(shown.width / block)), rows: Math.max(1, Math.round(shown.height / block)) };
}

async function mosaicTile(input: Buffer, field: string, tile: { width: number; height: number; tint: string }, task: ImageTask): Promise<Buffer> {
	let blocks: { data: Buffer; info: OutputInfo };
	try {
		const image = sharp(input, { animated: false, limitInputPixels: task.limitInputPixels }).timeout({ seconds: task.timeoutSeconds() });
		const { width = 1, height = 1 } = await image.metadata();
		const { columns, rows } = mosaicGrid({ width, height }, tile);
		blocks = await image.resize(columns, rows, { fit: 'cover' }).tint(tile.tint).removeAlpha().raw().toBuffer({ resolveWithObject: true });
	} catch (error) {
		if (isPixelLimitError(error)) throw imageTooLarge({ field, status: 400 }, task.limitInputPixels);
		throw invalidField(field, `'${field}' could not be decoded: the image data is damaged`, 'undecodable_image');
	}
	const { width, height, channels } = blocks.info;
	return sharp(blocks.data, { raw: { width, height, channels } })
		.timeout({ seconds: task.timeoutSeconds() })
		.resize(tile.width, tile.height, { fit: 'fill', kernel: 'nearest' })
		.png()
		.toBuffer();
}

export async function renderSandboxImage(scene: SandboxScene, format: ImageOutputFormat, task: ImageTask): Promise<Buffer> {
	const seed = createHash('sha256')
		.update(JSON.stringify([scene.model, scene.prompt, scene.styleType ?? '', scene.negativePrompt ?? '', scene.magicPromptOption ?? '', scene.seed]))
		.digest();
	const palette = paletteFor(scene, seed);
	// One document drawn once: layers composited one over another would each pass over every pixel.
	const svg =
		`<svg xmlns="http://www.w3.org/2000/svg" width="${scene.width}" height="${scene.height}">` +
		`${background(scene, seed, palette)}${await tiles(scene, palette.accents[0]!, task)}${caption(scene)}</svg>`;
	task.throwIfStopped();
	// The background covers every pixel: its alpha is opaque throughout and goes.
	const canvas = sharp(Buffer.from(svg)).removeAlpha().timeout({ seconds: task.timeoutSeconds() });
	if (format === 'jpeg') return canvas.jpeg({ quality: 90 }).toBuffer();
	if (format === 'webp') return canvas.webp({ quality: 90 }).toBuffer();
	return canvas.png().toBuffer();
}
