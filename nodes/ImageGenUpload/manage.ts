/**
 * The Get Info and Delete operations: a hosted file named by its id or by its URL. The service
 * answers 404 for files of other API keys, so the node never learns whether such a file exists.
 */
import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import type { FileInfoResponse } from '../../core/api';
import { readRequestSettings } from '../shared/request-options';
import { callApi } from '../shared/transport';
import { fileIdFromUrl } from '../shared/answers';
import { provenanceJson } from '../shared/provenance';

const FILE_ID = /^[A-Za-z0-9_-]{1,128}$/;

export async function getInfoForItem(context: IExecuteFunctions, itemIndex: number): Promise<INodeExecutionData[]> {
	const id = readFileId(context, itemIndex);
	const info = await callApi<FileInfoResponse>(context, {
		method: 'GET',
		path: `/files/${id}`,
		itemIndex,
		...readRequestSettings(context, itemIndex),
	});
	const json: IDataObject = {
		id: info.id,
		url: info.url,
		mediaType: info.mimeType.startsWith('video/') ? 'video' : 'image',
		mimeType: info.mimeType,
		sizeBytes: info.sizeBytes,
		createdAt: info.createdAt,
		expiresAt: info.expiresAt,
		...provenanceJson(info.provenance),
	};
	return [{ json }];
}

export async function deleteForItem(context: IExecuteFunctions, itemIndex: number): Promise<INodeExecutionData[]> {
	const id = readFileId(context, itemIndex);
	await callApi<unknown>(context, { method: 'DELETE', path: `/files/${id}`, itemIndex, ...readRequestSettings(context, itemIndex) });
	return [{ json: { id, deleted: true } }];
}

/** The id in `fileId`, which holds either the id itself or a hosted URL (`…/files/<id>.<ext>`). */
function readFileId(context: IExecuteFunctions, itemIndex: number): string {
	const value = String(context.getNodeParameter('fileId', itemIndex, '')).trim();
	const fail = (reason: string) =>
		new NodeOperationError(context.getNode(), `Parameter 'fileId' of item ${itemIndex}: ${reason}`, {
			itemIndex,
			description: 'Give the id from an upload’s output, or the hosted URL itself.',
		});
	if (!value) throw fail("'fileId' is empty");
	let id = value;
	if (/^https?:\/\//i.test(value)) {
		let path: string;
		try {
			path = new URL(value).pathname;
		} catch {
			throw fail(`${JSON.stringify(value)} is not a valid URL`);
		}
		if (!/\/files\/[^/]+$/.test(path)) throw fail(`${JSON.stringify(value)} is not the URL of a hosted file (…/files/<id>.<ext>)`);
		try {
			id = fileIdFromUrl(value);
		} catch {
			// A malformed %-escape in the name.
			throw fail(`${JSON.stringify(value)} is not the URL of a hosted file (…/files/<id>.<ext>)`);
		}
	}
	if (!FILE_ID.test(id)) throw fail(`${JSON.stringify(id)} is not a file id (letters, digits, '-' and '_')`);
	return id;
}
