/**
 * Every call to the ImageGen API goes through here: credentials and base URL, the time limit,
 * bounded retries on 429 and 5xx that honour Retry-After, and the service's error turned into a
 * NodeApiError that carries its message and names the parameter behind the rejected field.
 */
import type {
	IExecuteFunctions,
	IHttpRequestMethods,
	IHttpRequestOptions,
	IN8nHttpFullResponse,
	JsonObject,
} from 'n8n-workflow';
import { NodeApiError, sleep } from 'n8n-workflow';

import { isApiErrorBody, type ApiErrorBody } from '../../core/errors';
import { parameterNameFor } from '../../core/request';
import { errorCodeOf, parseRetryAfter, retryDelayMs, shouldRetry, type RetryPolicy } from '../../core/retry-policy';

export const CREDENTIAL_TYPE = 'imageGenApi';

export interface ApiCall {
	method: IHttpRequestMethods;
	/** Path below the base URL, e.g. `/images/generations`. */
	path: string;
	/** Called once per attempt, so a streamed body is fresh on every retry. */
	body?: () => IHttpRequestOptions['body'] | Promise<IHttpRequestOptions['body']>;
	headers?: Record<string, string>;
	timeoutMs: number;
	retry: RetryPolicy;
	itemIndex: number;
	/** The node parameter behind each field this call sends, where it differs from the generation parameters'. */
	parameterNames?: Readonly<Record<string, string>>;
	/** The node parameter that named what a 404 did not find (an id in the path). */
	notFoundParameter?: string;
	/**
	 * Repeat only 429s: for an API without idempotency keys, whose 5xx or lost answer may come
	 * after the image was made and charged, so a repeat could charge it twice.
	 */
	onlyRateLimitsRetried?: boolean;
}

async function baseUrlOf(context: IExecuteFunctions, itemIndex: number): Promise<string> {
	const credentials = await context.getCredentials<{ baseUrl?: string }>(CREDENTIAL_TYPE, itemIndex);
	return String(credentials.baseUrl ?? '').replace(/\/+$/, '');
}

export async function callApi<T>(context: IExecuteFunctions, call: ApiCall): Promise<T> {
	return (await callApiForResponse(context, call)).body as T;
}

/** As `callApi`, with the status and headers of the successful answer (a 202 and its Retry-After). */
export async function callApiForResponse(context: IExecuteFunctions, call: ApiCall): Promise<IN8nHttpFullResponse> {
	const baseUrl = await baseUrlOf(context, call.itemIndex);
	for (let attempt = 1; ; attempt++) {
		let response: IN8nHttpFullResponse;
		try {
			response = (await context.helpers.httpRequestWithAuthentication.call(context, CREDENTIAL_TYPE, {
				method: call.method,
				url: `${baseUrl}${call.path}`,
				body: await call.body?.(),
				headers: call.headers,
				json: true,
				timeout: call.timeoutMs,
				returnFullResponse: true,
				ignoreHttpStatusErrors: true,
			})) as IN8nHttpFullResponse;
		} catch (error) {
			throw new NodeApiError(context.getNode(), toJsonObject(error), {
				message: `Could not reach the ImageGen API at ${baseUrl}: ${(error as Error).message}`,
				description: 'Check the Base URL of the ImageGen API credential and that the service is running.',
				itemIndex: call.itemIndex,
			});
		}
		if (response.statusCode < 400) return response;
		const retryable = !call.onlyRateLimitsRetried || response.statusCode === 429;
		if (retryable && shouldRetry(response.statusCode, attempt, call.retry, errorCodeOf(response.body)) && !context.getExecutionCancelSignal()?.aborted) {
			const retryAfter = parseRetryAfter(response.headers['retry-after']);
			await sleep(retryDelayMs(attempt, retryAfter, call.retry));
			continue;
		}
		throw apiError(context, response, call.itemIndex, call.parameterNames, call.notFoundParameter);
	}
}

/** What to do about refusals that no parameter can fix: they come from the API key's limits. */
const KEY_ADVICE: Readonly<Record<string, string>> = {
	budget_exceeded:
		"The budget of this API key is spent; not retried, since repeating cannot succeed before the budget resets. Wait until then or ask the service's operator to raise it",
	admin_key_not_accepted: "The credential holds the service's admin key, which only manages it; enter an API key in the ImageGen API credential instead",
	key_expired: "This API key has expired; ask the service's operator for a new one and update the ImageGen API credential",
	key_blocked: "This API key is blocked by the service's operator",
};

/** The service's own message first; the field it names mapped back to the parameter users see. */
function apiError(
	context: IExecuteFunctions,
	response: IN8nHttpFullResponse,
	itemIndex: number,
	parameterNames: Readonly<Record<string, string>> = {},
	notFoundParameter?: string,
): NodeApiError {
	const body = response.body;
	const status = String(response.statusCode);
	if (!isApiErrorBody(body)) {
		return new NodeApiError(context.getNode(), { body: String(body ?? '') } as JsonObject, {
			message: `The ImageGen API answered HTTP ${status}`,
			httpCode: status,
			itemIndex,
		});
	}
	const parameter = status === '404' ? notFoundParameter : undefined;
	return describedApiError(context, body, { origin: `HTTP ${status}`, httpCode: status, itemIndex, parameterNames, parameter });
}

/**
 * An error body of the API as a NodeApiError: its message, and a description that names where it
 * came from (`origin`: an HTTP status, a failed generation) and the parameter behind its field
 * (or `parameter`, when the caller knows better).
 */
export function describedApiError(
	context: IExecuteFunctions,
	body: ApiErrorBody,
	described: { origin: string; httpCode?: string; itemIndex: number; parameterNames?: Readonly<Record<string, string>>; parameter?: string },
): NodeApiError {
	const { origin, httpCode, itemIndex, parameterNames = {} } = described;
	const { message, param, code } = body.error;
	const parameter = described.parameter ?? (param && Object.hasOwn(parameterNames, param) ? parameterNames[param] : undefined) ?? parameterNameFor(param) ?? param;
	const details = [origin, code && `code ${code}`, param && `field '${param}'`].filter(Boolean).join(', ');
	return new NodeApiError(context.getNode(), body as unknown as JsonObject, {
		message,
		description: KEY_ADVICE[code] ? `${KEY_ADVICE[code]} (${details}).` : parameter ? `Check the parameter '${parameter}' (${details}).` : `${details}.`,
		...(httpCode ? { httpCode } : {}),
		itemIndex,
	});
}

function toJsonObject(error: unknown): JsonObject {
	if (error instanceof Error) return { message: error.message, name: error.name };
	return { message: String(error) };
}
