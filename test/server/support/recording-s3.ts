/**
 * A stand-in S3 endpoint on loopback for what s3rver does not implement: listing and aborting
 * multipart uploads. It answers the S3 REST calls the driver makes (path-style) with just enough
 * XML for the AWS SDK, keeps a list of incomplete uploads, records every call, and can be told to
 * answer the next call of an operation with an S3 error. It stores no bytes.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type S3Operation =
	| 'HeadBucket'
	| 'ListMultipartUploads'
	| 'CreateMultipartUpload'
	| 'UploadPart'
	| 'CompleteMultipartUpload'
	| 'AbortMultipartUpload'
	| 'PutObject'
	| 'GetObject'
	| 'DeleteObject'
	| 'DeleteObjects'
	| 'Unknown';

export interface RecordedS3Call {
	operation: S3Operation;
	method: string;
	key: string;
	query: URLSearchParams;
	headers: http.IncomingHttpHeaders;
	bodyBytes: number;
	/** The body as text, for the small XML ones (not parts). */
	bodyText: string;
}

export interface IncompleteUpload {
	key: string;
	uploadId: string;
}

export interface RecordingS3 {
	endpoint: string;
	bucket: string;
	calls: RecordedS3Call[];
	/** Incomplete multipart uploads, as ListMultipartUploads reports them. */
	uploads: IncompleteUpload[];
	/** Uploads per ListMultipartUploads page (to exercise the markers). */
	pageSize: number;
	/** Per-key errors the next DeleteObjects answer reports (its HTTP status stays 200, as S3's does). */
	deleteErrors: Array<{ key: string; code: string }>;
	/** The next call of `operation` is answered with this S3 error. */
	failNext(operation: S3Operation, status: number, code: string): void;
	callsOf(operation: S3Operation): RecordedS3Call[];
	close(): Promise<void>;
}

export async function startRecordingS3(bucket = 'stand-in-bucket'): Promise<RecordingS3> {
	const failures: Array<{ operation: S3Operation; status: number; code: string }> = [];
	let nextUploadId = 1;
	const state: Pick<RecordingS3, 'calls' | 'uploads' | 'pageSize' | 'deleteErrors'> = { calls: [], uploads: [], pageSize: 1000, deleteErrors: [] };

	const server = http.createServer((request, response) => {
		let bodyBytes = 0;
		const small: Buffer[] = [];
		request.on('data', (chunk: Buffer) => {
			bodyBytes += chunk.length;
			if (bodyBytes <= 1024 * 1024) small.push(chunk);
		});
		request.on('end', () => {
			const url = new URL(request.url ?? '/', 'http://stand-in');
			const [, requestBucket = '', ...keyParts] = url.pathname.split('/');
			const key = decodeURIComponent(keyParts.join('/'));
			const operation = classify(request.method ?? '', key, url.searchParams);
			state.calls.push({ operation, method: request.method ?? '', key, query: url.searchParams, headers: request.headers, bodyBytes, bodyText: bodyBytes <= 1024 * 1024 ? Buffer.concat(small).toString() : '' });

			if (requestBucket !== bucket) return sendError(response, 404, 'NoSuchBucket');
			const failure = failures.findIndex((entry) => entry.operation === operation);
			if (failure >= 0) {
				const { status, code } = failures.splice(failure, 1)[0]!;
				return sendError(response, status, code);
			}
			answer(operation, key, url.searchParams, response);
		});
	});

	function answer(operation: S3Operation, key: string, query: URLSearchParams, response: http.ServerResponse): void {
		switch (operation) {
			case 'HeadBucket':
				return void response.writeHead(200).end();
			case 'CreateMultipartUpload': {
				const uploadId = `upload-${nextUploadId++}`;
				state.uploads.push({ key, uploadId });
				return sendXml(response, `<InitiateMultipartUploadResult><Bucket>${bucket}</Bucket><Key>${escapeXml(key)}</Key><UploadId>${uploadId}</UploadId></InitiateMultipartUploadResult>`);
			}
			case 'UploadPart':
			case 'PutObject':
				return void response.writeHead(200, { etag: `"etag-${state.calls.length}"` }).end();
			case 'CompleteMultipartUpload':
				state.uploads = state.uploads.filter((upload) => upload.uploadId !== query.get('uploadId'));
				return sendXml(response, `<CompleteMultipartUploadResult><Bucket>${bucket}</Bucket><Key>${escapeXml(key)}</Key><ETag>"done"</ETag></CompleteMultipartUploadResult>`);
			case 'AbortMultipartUpload': {
				const before = state.uploads.length;
				state.uploads = state.uploads.filter((upload) => !(upload.key === key && upload.uploadId === query.get('uploadId')));
				if (state.uploads.length === before) return sendError(response, 404, 'NoSuchUpload');
				return void response.writeHead(204).end();
			}
			case 'ListMultipartUploads':
				return sendXml(response, listUploads(query));
			case 'DeleteObject':
				return void response.writeHead(204).end();
			case 'DeleteObjects': {
				const errors = state.deleteErrors.splice(0).map((entry) => `<Error><Key>${escapeXml(entry.key)}</Key><Code>${entry.code}</Code><Message>${entry.code}</Message></Error>`);
				return sendXml(response, `<DeleteResult>${errors.join('')}</DeleteResult>`);
			}
			case 'GetObject':
				return sendError(response, 404, 'NoSuchKey');
			default:
				return sendError(response, 501, 'NotImplemented');
		}
	}

	function listUploads(query: URLSearchParams): string {
		const prefix = query.get('prefix') ?? '';
		const keyMarker = query.get('key-marker') ?? '';
		const uploadIdMarker = query.get('upload-id-marker') ?? '';
		const sorted = state.uploads
			.filter((upload) => upload.key.startsWith(prefix))
			.sort((a, b) => (a.key === b.key ? compare(a.uploadId, b.uploadId) : compare(a.key, b.key)));
		const after = sorted.filter((upload) => !keyMarker || upload.key > keyMarker || (upload.key === keyMarker && upload.uploadId > uploadIdMarker));
		const page = after.slice(0, state.pageSize);
		const truncated = after.length > page.length;
		const last = page[page.length - 1];
		return [
			`<ListMultipartUploadsResult><Bucket>${bucket}</Bucket><Prefix>${escapeXml(prefix)}</Prefix>`,
			`<KeyMarker>${escapeXml(keyMarker)}</KeyMarker><UploadIdMarker>${escapeXml(uploadIdMarker)}</UploadIdMarker>`,
			truncated && last ? `<NextKeyMarker>${escapeXml(last.key)}</NextKeyMarker><NextUploadIdMarker>${last.uploadId}</NextUploadIdMarker>` : '',
			`<MaxUploads>${state.pageSize}</MaxUploads><IsTruncated>${truncated}</IsTruncated>`,
			...page.map((upload) => `<Upload><Key>${escapeXml(upload.key)}</Key><UploadId>${upload.uploadId}</UploadId></Upload>`),
			'</ListMultipartUploadsResult>',
		].join('');
	}

	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	const { port } = server.address() as AddressInfo;
	return Object.assign(state, {
		endpoint: `http://127.0.0.1:${port}`,
		bucket,
		failNext(operation: S3Operation, status: number, code: string) {
			failures.push({ operation, status, code });
		},
		callsOf(operation: S3Operation) {
			return state.calls.filter((call) => call.operation === operation);
		},
		close() {
			server.closeAllConnections();
			return new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
		},
	});
}

function classify(method: string, key: string, query: URLSearchParams): S3Operation {
	if (key === '') {
		if (method === 'HEAD') return 'HeadBucket';
		if (method === 'GET' && query.has('uploads')) return 'ListMultipartUploads';
		if (method === 'POST' && query.has('delete')) return 'DeleteObjects';
		return 'Unknown';
	}
	if (method === 'POST' && query.has('uploads')) return 'CreateMultipartUpload';
	if (method === 'PUT' && query.has('uploadId')) return 'UploadPart';
	if (method === 'POST' && query.has('uploadId')) return 'CompleteMultipartUpload';
	if (method === 'DELETE' && query.has('uploadId')) return 'AbortMultipartUpload';
	if (method === 'PUT') return 'PutObject';
	if (method === 'GET') return 'GetObject';
	if (method === 'DELETE') return 'DeleteObject';
	return 'Unknown';
}

function sendXml(response: http.ServerResponse, body: string): void {
	response.writeHead(200, { 'content-type': 'application/xml' }).end(`<?xml version="1.0" encoding="UTF-8"?>\n${body}`);
}

function sendError(response: http.ServerResponse, status: number, code: string): void {
	response.writeHead(status, { 'content-type': 'application/xml' }).end(`<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${code} (stand-in)</Message></Error>`);
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const escapeXml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
