/**
 * Assembles the service: Fastify with JSON errors everywhere, the public file routes, and the
 * authenticated, rate-limited /v1 scope (models, uploads, generation). `createService` also owns
 * the sweeper, so closing the service stops every timer it started.
 */
import { join } from 'node:path';
import multipart from '@fastify/multipart';
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import { createAuthenticator } from './auth';
import type { ServiceConfig } from './config';
import type { ServiceContext } from './context';
import { ImageGenError } from '../../core/errors';
import { installErrorHandling, installNotFoundHandler, sendApiError } from './error-handler';
import { createSafeFetcher } from './net/safe-fetch';
import { createRateLimiter } from './rate-limit';
import { registerFileRoutes } from './routes/files';
import { registerUsageRoutes } from './routes/usage';
import { UsageLedger } from './usage/ledger';
import { registerGenerationRoutes } from './routes/generations';
import { registerModelRoutes } from './routes/models';
import { registerUploadRoutes } from './routes/uploads';
import { DiskFileStore } from './storage/disk-file-store';
import { startSweeper, sweepInterval, type Sweeper } from './storage/sweeper';

/** Input images of a generation request are held in memory while the provider works. */
const MAX_INPUT_IMAGE_BYTES = 50 * 1024 * 1024;
const MULTIPART_FIELD_BYTES = 1024;

export interface Service {
	app: FastifyInstance;
	context: ServiceContext;
	store: DiskFileStore;
	/** Listens and answers the origin actually bound (the real port when 0 was asked for). */
	listen(): Promise<{ address: string; publicUrl: string }>;
	close(): Promise<void>;
}

export async function createService(config: ServiceConfig): Promise<Service> {
	if (config.apiKeys.length === 0) throw new Error('createService needs at least one API key');
	let publicBaseUrl = config.publicUrl ?? '';
	const store = new DiskFileStore({
		directory: join(config.dataDir, 'files'),
		retentionSeconds: config.retentionSeconds,
		publicBaseUrl: () => publicBaseUrl,
	});
	await store.init();

	const fetcher = createSafeFetcher({ allowPrivate: config.allowPrivateUrls, timeoutMs: config.fetchTimeoutMs });
	const context: ServiceContext = {
		store,
		fetchRemote: fetcher.fetchRemote,
		dataDir: config.dataDir,
		maxInputImageBytes: Math.min(MAX_INPUT_IMAGE_BYTES, config.maxUploadBytes),
		generation: {
			providers: config.providers,
			prices: config.prices,
			env: process.env,
			timeoutMs: config.generationTimeoutMs,
		},
		usage: await UsageLedger.open(config.dataDir),
	};

	const app = await buildApp(config, context, fetcher.openRemote);
	let sweeper: Sweeper | null = null;

	return {
		app,
		context,
		store,
		async listen() {
			const address = await app.listen({
				host: config.host,
				port: config.port,
				// The CLI prints the one human-readable ready line itself.
				listenTextResolver: (bound) => `bound ${bound}`,
			});
			const bound = app.server.address();
			const port = typeof bound === 'object' && bound ? bound.port : config.port;
			publicBaseUrl = config.publicUrl ?? defaultPublicUrl(config.host, port);
			sweeper = startSweeper(store, sweepInterval(config.retentionSeconds), (error) =>
				app.log.error({ err: error }, 'sweeping expired files failed'),
			);
			return { address: originOf(address), publicUrl: publicBaseUrl };
		},
		async close() {
			await sweeper?.stop();
			await app.close();
			await context.usage.flushed();
		},
	};
}

export async function buildApp(
	config: ServiceConfig,
	context: ServiceContext,
	openRemote: ReturnType<typeof createSafeFetcher>['openRemote'],
): Promise<FastifyInstance> {
	const app = Fastify({
		bodyLimit: config.maxJsonBytes,
		logController: new LogController({ disableRequestLogging: true }),
		// Requests Fastify rejects before routing (a malformed URL) get our error shape too.
		frameworkErrors: (error, _request, reply) => {
			sendApiError(reply, new ImageGenError(400, `The request URL is malformed: ${error.message}`, { code: 'invalid_url' }));
		},
		logger: {
			level: config.logLevel,
			// Only what is safe to keep: no headers (Authorization) and no query string (keys end up there).
			serializers: {
				req: (request) => ({ method: request.method, path: String(request.url).split('?')[0], remoteAddress: request.ip }),
			},
			// Plugins may log raw headers at debug/trace level (the multipart parser does): cut them out.
			redact: {
				paths: ['req.headers', 'headers.authorization', 'headers.cookie', '*.headers.authorization', '*.headers.cookie', '*.*.headers.authorization'],
				censor: '[redacted]',
			},
		},
	});
	app.decorateRequest('apiKeyId', '');
	// Uploads are JSON or multipart; anything else (text/plain included) is a 415.
	app.removeContentTypeParser('text/plain');
	installErrorHandling(app, { maxJsonBytes: config.maxJsonBytes, maxUploadBytes: config.maxUploadBytes });
	await app.register(multipart, {
		limits: {
			// Our own byte counter enforces the limit (and names the field); this is a backstop.
			fileSize: config.maxUploadBytes + 1,
			files: 1,
			fields: 4,
			parts: 6,
			fieldSize: MULTIPART_FIELD_BYTES,
		},
	});

	app.get('/healthz', async () => ({ status: 'ok' }));
	await registerFileRoutes(app, context.store as DiskFileStore);

	const authenticate = createAuthenticator(config.apiKeys);
	const rateLimit = createRateLimiter(config.rateLimitPerMinute);
	await app.register(
		async (v1) => {
			v1.addHook('onRequest', async (request) => {
				authenticate(request);
				rateLimit(request.apiKeyId);
			});
			installNotFoundHandler(v1);
			await registerModelRoutes(v1, config.priceOverrides, context.generation);
			await registerUploadRoutes(v1, { store: context.store as DiskFileStore, openRemote, maxUploadBytes: config.maxUploadBytes });
			await registerGenerationRoutes(v1, context);
			await registerUsageRoutes(v1, context.usage);
		},
		{ prefix: '/v1' },
	);
	return app;
}

function defaultPublicUrl(host: string, port: number): string {
	// A wildcard bind address is not something a client can connect to; loopback always is.
	const reachable = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '[::1]' : host.includes(':') ? `[${host}]` : host;
	return `http://${reachable}:${port}`;
}

function originOf(address: string): string {
	return address.replace(/\/$/, '');
}
