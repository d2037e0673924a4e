/**
 * A key's own hosted files, looked up and deleted by id: shared by GET/DELETE /v1/files/<id> and
 * the MCP tools `get_file` / `delete_file`. Only the API key that stored a file, by upload or
 * generation, may see or delete it; for any other key it does not exist (404), so ids cannot be probed.
 */
import { NO_PROVENANCE, type FileInfoResponse } from '../../../core/api';
import { ImageGenError } from '../../../core/errors';
import type { IdempotencyStore } from '../idempotency/idempotency-store';
import type { FileRecord, HostedFiles } from './hosted-files';

const FILE_ID = /^[A-Za-z0-9_-]{16,64}$/;

const fileNotFound = (id: string) =>
	new ImageGenError(404, `No file '${id}' of this API key: it never existed, has expired or was deleted`, {
		param: 'id',
		code: 'file_not_found',
	});

export async function ownedFile(files: HostedFiles, id: string, ownerKeyId: string): Promise<FileRecord> {
	const file = FILE_ID.test(id) ? await files.info(id, ownerKeyId) : null;
	if (!file) throw fileNotFound(id);
	return file;
}

export function describeFile(files: HostedFiles, file: FileRecord): FileInfoResponse {
	return {
		id: file.id,
		url: files.publicUrl(file),
		mimeType: file.mimeType,
		sizeBytes: file.size,
		createdAt: file.createdAt.toISOString(),
		expiresAt: file.expiresAt.toISOString(),
		provenance: file.provenance ?? NO_PROVENANCE,
	};
}

export async function deleteOwnedFile(files: HostedFiles, idempotency: IdempotencyStore, id: string, ownerKeyId: string): Promise<void> {
	if (!FILE_ID.test(id)) throw fileNotFound(id);
	// Before the bytes go: a repeat of the request that made the file then runs again rather than
	// replaying a URL that is about to be 404 (also if the delete itself fails half-way).
	await idempotency.forgetFile(ownerKeyId, id);
	if (!(await files.remove(id, ownerKeyId))) throw fileNotFound(id);
}
