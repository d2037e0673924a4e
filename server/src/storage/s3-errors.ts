/**
 * How the S3 answers this driver cares about look once the SDK has turned them into errors. Stores
 * differ in the details (AWS names the error, HEAD answers carry no body, S3-compatible servers
 * answer what they do not implement with 501 or 405), so each check looks at the name and the
 * HTTP status both.
 */

interface SdkErrorShape {
	name?: unknown;
	Code?: unknown;
	$metadata?: { httpStatusCode?: unknown };
}

function errorName(error: unknown): string {
	const shape = (error ?? {}) as SdkErrorShape;
	return typeof shape.name === 'string' ? shape.name : typeof shape.Code === 'string' ? shape.Code : '';
}

function httpStatusOf(error: unknown): number | undefined {
	const status = ((error ?? {}) as SdkErrorShape).$metadata?.httpStatusCode;
	return typeof status === 'number' ? status : undefined;
}

/** No such object (HEAD answers carry no body, hence the bare 404). A missing bucket is not this. */
export function isNotFound(error: unknown): boolean {
	const name = errorName(error);
	return name !== 'NoSuchBucket' && (name === 'NoSuchKey' || name === 'NotFound' || httpStatusOf(error) === 404);
}

export function isNoSuchUpload(error: unknown): boolean {
	return errorName(error) === 'NoSuchUpload';
}

/**
 * The store does not implement the operation at all (s3rver for the multipart listing and abort
 * calls). Only exactly these answers are tolerated: a denied or failing call is a real problem.
 */
export function isNotImplemented(error: unknown): boolean {
	const status = httpStatusOf(error);
	return ['NotImplemented', 'MethodNotAllowed'].includes(errorName(error)) || status === 501 || status === 405;
}

/** A short reason for a person reading a start-up error; never includes request signatures. */
export function describeS3Error(error: unknown): string {
	const status = httpStatusOf(error);
	const name = errorName(error);
	const message = error instanceof Error ? error.message : String(error);
	const code = (error as { code?: unknown } | null)?.code;
	const parts = [status === undefined ? undefined : `HTTP ${status}`, name && name !== 'Error' && !message.startsWith(name) ? name : undefined, message && message !== 'UnknownError' ? message : undefined, typeof code === 'string' && !message.includes(code) ? code : undefined];
	return parts.filter((part) => part !== undefined).join(': ') || 'unknown error';
}
