/**
 * Telling "one of our engines (PostgreSQL, the bucket) cannot be reached right now" apart from a
 * bug. The former is nobody's fault and passes: the client gets a 503 with Retry-After, which the
 * nodes retry, and never the driver's text (it names internal hosts and ports); the details go
 * to the log. Judged by the shape drivers give such failures: socket error codes, PostgreSQL's
 * connection-class SQLSTATEs, SQLite's busy and locked codes, pg's own connection messages, the AWS SDK's time-outs and 5xx.
 */
import { ImageGenError } from '../../../core/errors';

/** Engines that were down come back within seconds in the common case (restart, fail-over). */
const ENGINE_RETRY_AFTER_SECONDS = 2;

const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNABORTED', 'EHOSTDOWN', 'ENETDOWN']);
/** admin shutdown, crash shutdown, cannot connect now, too many connections, statement time-out. */
const POSTGRES_CODES = new Set(['57P01', '57P02', '57P03', '53300', '57014', '25P03']);
const PG_CONNECTION_MESSAGES = [
	'Connection terminated',
	'timeout exceeded when trying to connect',
	'Query read timeout',
	'is not queryable',
	'Client was closed',
	'Cannot use a pool after calling end',
];
const SDK_NAMES = new Set(['TimeoutError', 'RequestTimeout', 'RequestTimeTooSkewed', 'ServiceUnavailable', 'SlowDown', 'InternalError', 'AbortError']);

interface ErrorShape {
	code?: unknown;
	name?: unknown;
	message?: unknown;
	errors?: unknown;
	cause?: unknown;
	$metadata?: { httpStatusCode?: unknown };
}

export function isEngineUnreachable(error: unknown, depth = 0): boolean {
	if (typeof error !== 'object' || error === null || depth > 5) return false;
	if (error instanceof ImageGenError) return false;
	const shape = error as ErrorShape;
	const code = typeof shape.code === 'string' ? shape.code : '';
	if (SOCKET_CODES.has(code) || POSTGRES_CODES.has(code) || code.startsWith('08')) return true;
	if (isDatabaseBusy(error)) return true;
	const message = typeof shape.message === 'string' ? shape.message : '';
	if (PG_CONNECTION_MESSAGES.some((text) => message.includes(text))) return true;
	const status = shape.$metadata?.httpStatusCode;
	if (typeof shape.$metadata === 'object' && (SDK_NAMES.has(String(shape.name)) || (typeof status === 'number' && status >= 500))) return true;
	// Node reports a refused connection to a name with several addresses as an AggregateError.
	if (Array.isArray(shape.errors) && shape.errors.some((inner) => isEngineUnreachable(inner, depth + 1))) return true;
	return isEngineUnreachable(shape.cause, depth + 1);
}

/**
 * Errors raised by our engines' drivers (as opposed to a request body's parser): a socket or file
 * system call, an SQLite or PostgreSQL answer, an S3 answer. Never the client's fault, whatever they say.
 */
export function isEngineError(error: unknown): boolean {
	if (typeof error !== 'object' || error === null || error instanceof ImageGenError) return false;
	const shape = error as ErrorShape & { syscall?: unknown; severity?: unknown };
	// better-sqlite3's SqliteError: every code it gives starts so (SQLITE_FULL, SQLITE_CORRUPT, …).
	if (typeof shape.code === 'string' && shape.code.startsWith('SQLITE_')) return true;
	return isEngineUnreachable(error) || typeof shape.syscall === 'string' || typeof shape.severity === 'string' || typeof shape.$metadata === 'object';
}

/** Another process held the embedded database's write lock for longer than the service waits. */
export function isDatabaseBusy(error: unknown): boolean {
	const code = (error as { code?: unknown } | null)?.code;
	return typeof code === 'string' && (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'));
}

/** Its 503: nothing was written, and the lock is usually free again within seconds. */
export function databaseBusy(cause: unknown): ImageGenError {
	return new ImageGenError(503, 'The database is busy: another process holds its write lock. Nothing was changed; retry in a few seconds', {
		code: 'database_busy',
		retryAfterSeconds: ENGINE_RETRY_AFTER_SECONDS,
		cause,
	});
}

/** The 503 for an unreachable engine; `cause` is kept for the log, never shown. */
export function serviceUnavailable(cause: unknown, code = 'service_unavailable'): ImageGenError {
	const what = code === 'storage_unavailable' ? 'The file storage' : 'A storage engine of the service';
	return new ImageGenError(503, `${what} cannot be reached right now; nothing was changed, retry in a few seconds`, {
		code,
		retryAfterSeconds: ENGINE_RETRY_AFTER_SECONDS,
		cause,
	});
}
