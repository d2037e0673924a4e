/**
 * A binary property of an input item, read through n8n's helpers so the filesystem and S3 binary
 * modes stream from their store instead of loading the whole file into memory.
 */
import type { IExecuteFunctions } from 'n8n-workflow';
import { BINARY_ENCODING } from 'n8n-workflow';

import { SNIFF_BYTES } from '../../core/media';
import type { ByteSource } from './multipart';

export interface BinaryInput {
	propertyName: string;
	fileName: string;
	mimeType: string;
	size: number;
	/** A fresh read of the bytes: a stream for stored binaries, the buffer for in-memory ones. */
	open(): Promise<ByteSource>;
	/** The whole file in memory; only for inputs small enough to inline. */
	readAll(): Promise<Buffer>;
}

export async function readBinaryInput(
	context: IExecuteFunctions,
	itemIndex: number,
	propertyName: string,
): Promise<BinaryInput> {
	const binary = context.helpers.assertBinaryData(itemIndex, propertyName);
	const fileName = binary.fileName ?? `${propertyName}${binary.fileExtension ? `.${binary.fileExtension}` : ''}`;
	const readAll = async () => await context.helpers.getBinaryDataBuffer(itemIndex, propertyName);
	const storedId = binary.id;
	if (storedId) {
		const metadata = await context.helpers.getBinaryMetadata(storedId);
		return {
			propertyName,
			fileName: metadata.fileName ?? fileName,
			mimeType: binary.mimeType || metadata.mimeType || 'application/octet-stream',
			size: metadata.fileSize,
			open: async () => await context.helpers.getBinaryStream(storedId),
			readAll,
		};
	}
	const bytes = Buffer.from(binary.data, BINARY_ENCODING);
	return {
		propertyName,
		fileName,
		mimeType: binary.mimeType || 'application/octet-stream',
		size: bytes.byteLength,
		open: async () => bytes,
		readAll: async () => bytes,
	};
}

/** The first SNIFF_BYTES of the file, enough to tell its kind; a stream is closed once they are read. */
export async function readHead(input: BinaryInput): Promise<Uint8Array> {
	const content = await input.open();
	if (content instanceof Uint8Array) return content.subarray(0, SNIFF_BYTES);
	const chunks: Uint8Array[] = [];
	let length = 0;
	// Leaving the loop early closes the stream: only the first few kilobytes are ever read.
	for await (const chunk of content) {
		const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
		chunks.push(bytes);
		length += bytes.byteLength;
		if (length >= SNIFF_BYTES) break;
	}
	return Buffer.concat(chunks).subarray(0, SNIFF_BYTES);
}
