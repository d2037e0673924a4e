/**
 * Raw pixels as sharp answers them (`.raw().toBuffer({ resolveWithObject: true })`) and takes them
 * back (`sharp(data, { raw: info })`): 8 bits a sample, rows top to bottom, samples interleaved.
 */
export interface RawImage {
	data: Uint8Array;
	info: { width: number; height: number; channels: number };
}

/** Throws a RangeError naming the field that does not hold a raw image. */
export function checkRawImage(image: RawImage, field = 'pixels'): void {
	const { width, height, channels } = image.info;
	for (const [name, value] of [['width', width], ['height', height]] as const) {
		if (!Number.isInteger(value) || value < 1) throw new RangeError(`${field}.info.${name} must be a positive whole number of pixels, not ${value}`);
	}
	if (!Number.isInteger(channels) || channels < 1 || channels > 4) {
		throw new RangeError(`${field}.info.channels must be 1 to 4 (grey, grey and alpha, RGB, RGBA), not ${channels}`);
	}
	const expected = width * height * channels;
	if (image.data.length !== expected) {
		throw new RangeError(`${field}.data holds ${image.data.length} bytes; ${width} × ${height} × ${channels} samples of 8 bits are ${expected}`);
	}
}

/** Channels that carry colour: the alpha channel, when there is one, is never marked. */
export function colourChannels(channels: number): number {
	return channels === 2 || channels === 4 ? channels - 1 : channels;
}
