import { Transform, type TransformCallback } from 'node:stream';

/**
 * How many bytes each stage of an upload's pipeline (multipart parser, inspector, counter, file
 * writer) holds before it asks the one before it to wait. At Node's default before 22 (16 KiB, a
 * quarter of one socket read; 64 KiB since) every chunk cost a pause and a resume at each stage;
 * at 128 KiB each stage holds two socket reads before it asks for a pause, so a large upload flows
 * nearly as fast as through a bare pipe, for well under a megabyte more per upload in flight.
 */
export const STREAM_HIGH_WATER_MARK = 128 * 1024;

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
