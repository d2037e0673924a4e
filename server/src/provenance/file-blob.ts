/**
 * A file on disk as the C2PA engine's WebAssembly build reads a browser Blob (`size`, `slice`,
 * then FileReaderSync on a slice; c2pa-engine.ts provides that reader): a slice is only a range,
 * and reading it reads that range from the file, so no copy of the file is held on the JavaScript
 * side beyond what the engine asks for at once.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

/** What the engine's FileReaderSync reads: a Blob-like that knows how to read itself. */
export interface ReadableBlob {
	readonly size: number;
	slice(start?: number, end?: number): ReadableBlob;
	read(): ArrayBuffer;
}

export class FileBlob implements ReadableBlob {
	private constructor(
		private readonly file: { fd: number; closed: boolean },
		private readonly start: number,
		readonly size: number,
	) {}

	static open(path: string): FileBlob {
		const fd = openSync(path, 'r');
		return new FileBlob({ fd, closed: false }, 0, fstatSync(fd).size);
	}

	/** As Blob.slice: offsets relative to this blob, negative ones from its end, clamped to it. */
	slice(start = 0, end = this.size): FileBlob {
		const from = clamp(start, this.size);
		const to = Math.max(from, clamp(end, this.size));
		return new FileBlob(this.file, this.start + from, to - from);
	}

	read(): ArrayBuffer {
		if (this.file.closed) throw new Error('the file behind this blob is closed');
		const buffer = new ArrayBuffer(this.size);
		const view = new Uint8Array(buffer);
		for (let done = 0; done < this.size; ) {
			const read = readSync(this.file.fd, view, done, this.size - done, this.start + done);
			if (read === 0) throw new Error('the file behind this blob ended early (it changed while being read)');
			done += read;
		}
		return buffer;
	}

	/** Closes the file for this blob and every slice of it. */
	close(): void {
		if (this.file.closed) return;
		this.file.closed = true;
		closeSync(this.file.fd);
	}
}

function clamp(offset: number, size: number): number {
	return Math.min(size, Math.max(0, offset < 0 ? size + offset : offset));
}
