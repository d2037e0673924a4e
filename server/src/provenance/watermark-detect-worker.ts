/**
 * A worker thread of the watermark reader (watermark-reader.ts, run by piscina): an image checked
 * by POST /v1/provenance/verify or `verify_image` is decoded and its watermark read here, so the
 * reading's arithmetic over every pixel is not done on the service's event loop. Each call is one
 * image. Bytes that do not decode are answered as such, so the reader tells them apart from a
 * worker that died.
 */
import { detectWatermark, type WatermarkReading } from './watermark/detect';
import { decodePixels, type DecodeOptions } from './watermark/encoded-image';

export interface DetectTask {
	bytes: Uint8Array;
	options: DecodeOptions;
}

export type DetectAnswer = { reading: WatermarkReading } | { undecodable: string };

export default async function detectInWorker(task: DetectTask): Promise<DetectAnswer> {
	const bytes = Buffer.from(task.bytes.buffer, task.bytes.byteOffset, task.bytes.byteLength);
	try {
		return { reading: detectWatermark(await decodePixels(bytes, task.options)) };
	} catch (error) {
		if (error instanceof RangeError) return { undecodable: error.message };
		throw error;
	}
}
