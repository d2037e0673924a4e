import { Transform, type TransformCallback } from 'node:stream';
import { STREAM_HIGH_WATER_MARK } from './stream-high-water-mark';

/** Passes bytes through and counts them: the size is what was stored, not what a caller claims. */
export class ByteCounter extends Transform {
	bytes = 0;

	constructor(highWaterMark = STREAM_HIGH_WATER_MARK) {
		super({ highWaterMark });
	}

	override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
		this.bytes += chunk.length;
		callback(null, chunk);
	}
}
