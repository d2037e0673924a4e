/** A hosted PNG's metadata row for store tests: only what a test is about needs saying. */
import type { FileRecord } from '../../../server/src/storage/file-metadata';

export function pngFileRecord(id: string, fields: Partial<Omit<FileRecord, 'id'>> & Pick<FileRecord, 'expiresAt'>): FileRecord {
	return {
		id,
		name: `${id}.png`,
		storageKey: `${id}.png`,
		kind: 'image',
		mimeType: 'image/png',
		extension: 'png',
		size: 10,
		etag: `"${id}"`,
		ownerKeyId: 'owner',
		createdAt: new Date('2030-01-01T00:00:00Z'),
		...fields,
	};
}
