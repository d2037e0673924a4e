/**
 * `fastify.idempotency`: runs a POST at most once per `Idempotency-Key` of an API key and sends its
 * answer, through the configured IdempotencyStore (embedded or PostgreSQL, so a repeat on another
 * replica replays too). Without the header the request simply runs.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { ImageGenError } from '../../../core/errors';
import { IDEMPOTENCY_KEY_HEADER, parseIdempotencyKey, REPLAYED_HEADER, referencedFileIds, runIdempotent, type IdempotentAnswer } from '../idempotency/idempotency';
import { inlineAnswerBody, openInlineAnswer, type InlineAnswer } from '../storage/inline-answer';

declare module 'fastify' {
	interface FastifyInstance {
		idempotency: Idempotency;
	}
}

interface IdempotentRun {
	key: string | undefined;
	fingerprint: () => string;
	/**
	 * The request's work; what it answers is sent as JSON with status 200, its inline files
	 * (storage/inline-answer.ts) as base64 strings read from storage.
	 */
	run: () => Promise<unknown>;
	/** Stops waiting for a running first request (the client left). */
	signal?: AbortSignal;
}

interface Idempotency {
	/** The request's key, or undefined without the header; a malformed key is a 400. */
	keyOf(request: FastifyRequest): string | undefined;
	/**
	 * Runs the request, or with `key` answers what its first run answered (same `fingerprint`)
	 * without running it again. Throws what the run throws, and the 422 / 409 of a key in use.
	 */
	answer(request: FastifyRequest, options: IdempotentRun): Promise<SentAnswer>;
	/**
	 * Sends an answer of `answer` byte for byte, marked when it is a replay; its inline files are
	 * opened before anything is sent, and streamed (images in memory too, in the same pieces).
	 */
	reply(reply: FastifyReply, answer: SentAnswer): Promise<FastifyReply>;
	/** `answer` then `reply`. */
	send(request: FastifyRequest, reply: FastifyReply, options: IdempotentRun): Promise<FastifyReply>;
}

/** An answer as sent: a replay, or a first run's, whose images nobody will replay may be in memory. */
type SentAnswer = IdempotentAnswer & Pick<InlineAnswer, 'inlineBytes'>;

const JSON_TYPE = 'application/json; charset=utf-8';
/** A repeat waits this long for a running first request before it is told to retry (409). */
const MAX_WAIT_MS = 10_000;
/** Beyond the slowest a request may take, before its claim counts as left by a dead process. */
const LEASE_MARGIN_MS = 60_000;
/** A replay whose inline file went between the check and the read runs again; this many in a row is a bug. */
const MAX_REPLAY_ATTEMPTS = 3;

/** An answer's inline files are gone: a replay runs again (a stored answer read as it is, a job's, is `resultGone`). */
class InlineFilesGone extends Error {
	constructor(readonly fileIds: readonly string[]) {
		super(`the inline files ${fileIds.join(', ')} of an answer are gone`);
	}
}

/**
 * A job's inline image is gone: expired with the retention, or lost to a power cut (it is stored
 * without a disk sync of its own, storage/disk-object-storage.ts). A first answer never gets here:
 * it is sent from the image in memory.
 */
function resultGone(): ImageGenError {
	return new ImageGenError(404, "The generation's inline image is no longer stored (expired or lost); generate it again", { code: 'result_gone' });
}

function stillRunning(): ImageGenError {
	return new ImageGenError(409, 'The client went away while a request with this Idempotency-Key was still running', {
		param: 'Idempotency-Key',
		code: 'idempotency_in_progress',
		retryAfterSeconds: 1,
	});
}

export default fp(
	async (fastify) => {
		const { config } = fastify;
		const leaseMs = config.generationTimeoutMs + config.fetchTimeoutMs + LEASE_MARGIN_MS;
		// Never as long as a generation may take: a client that retried is better told to come back.
		const waitMs = Math.min(MAX_WAIT_MS, config.generationTimeoutMs / 2);

		const answer = async (request: FastifyRequest, options: IdempotentRun): Promise<SentAnswer> => {
			const run = async (): Promise<InlineAnswer> => {
				const result = await options.run();
				const { body, inlineFiles, inlineBytes } = inlineAnswerBody(result);
				// Remembered with the answer, so deleting one of these files forgets it (a repeat runs again).
				const fileIds = [...referencedFileIds(result), ...inlineFiles.map((part) => part.fileId)];
				return { status: 200, contentType: JSON_TYPE, body, fileIds, ...(inlineFiles.length > 0 ? { inlineFiles } : {}), ...(inlineBytes.length > 0 ? { inlineBytes } : {}) };
			};
			if (options.key === undefined) return { ...(await run()), replayed: false };
			try {
				return await runIdempotent({
					store: fastify.idempotencyStore,
					apiKeyId: request.apiKeyId,
					key: options.key,
					fingerprint: options.fingerprint(),
					retentionSeconds: config.retentionSeconds,
					leaseMs,
					waitMs,
					signal: options.signal,
					run,
					onStoreError: (error) => request.log.error({ err: error }, 'remembering an idempotent answer failed'),
					goneFiles: async (fileIds) => {
						const alive = await Promise.all(fileIds.map((id) => fastify.hostedFiles.info(id, request.apiKeyId)));
						return fileIds.filter((_, i) => alive[i] === null);
					},
				});
			} catch (error) {
				// The client left while its repeat waited for the first run: nothing failed here.
				if (options.signal?.aborted && !(error instanceof ImageGenError)) throw stillRunning();
				throw error;
			}
		};
		const reply = async (target: FastifyReply, sent: SentAnswer): Promise<FastifyReply> => {
			let body: string | NodeJS.ReadableStream = sent.body;
			if (sent.inlineFiles?.length || sent.inlineBytes?.length) {
				const opened = await openInlineAnswer(fastify.hostedFiles, sent, target.request.apiKeyId);
				if ('gone' in opened) throw sent.replayed ? new InlineFilesGone(opened.gone) : resultGone();
				target.header('content-length', String(opened.length));
				body = opened.stream;
			}
			if (sent.replayed) target.header(REPLAYED_HEADER, 'true');
			return target.status(sent.status).type(sent.contentType).send(body);
		};
		const send = async (request: FastifyRequest, target: FastifyReply, options: IdempotentRun): Promise<FastifyReply> => {
			for (let attempt = 1; ; attempt += 1) {
				const sent = await answer(request, options);
				try {
					return await reply(target, sent);
				} catch (error) {
					if (!(error instanceof InlineFilesGone && sent.replayed && attempt < MAX_REPLAY_ATTEMPTS)) throw error;
					// Deleted or expired between the replay's check and its read: as for any answer whose
					// file is gone, it is forgotten and the request runs again.
					for (const fileId of error.fileIds) await fastify.idempotencyStore.forgetFile(request.apiKeyId, fileId);
				}
			}
		};
		const idempotency: Idempotency = {
			keyOf: (request) => parseIdempotencyKey(request.headers[IDEMPOTENCY_KEY_HEADER]),
			answer,
			reply,
			send,
		};
		fastify.decorate('idempotency', idempotency);
	},
	{ name: 'idempotency', dependencies: ['config', 'engines', 'hosted-files'] },
);
