/**
 * Assembles the service: Fastify with JSON errors everywhere, the engines behind their interfaces
 * (plugins/engines.ts), the public file and health routes, and the authenticated, rate-limited /v1
 * scope (models, uploads, file info and delete, generation, usage, webhook secret, provenance checks). Closing the app (SIGTERM) lets in-flight requests
 * finish, answers 503 to new ones, then stops the sweeper, flushes the usage ledger and closes
 * every engine.
 */
import multipart from '@fastify/multipart';
import swagger from '@fastify/swagger';
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import type { ServiceConfig } from './config';
import { ImageGenError } from '../../core/errors';
import { answerClientError, installConnectionHandling } from './http/connections';
import { installErrorHandling, installNotFoundHandler, sendApiError } from './http/error-handler';
import { standardOutputLog } from './http/log-destination';
import { scope } from './http/scope';
import { buildProviderTable, type ProviderTable, type ProviderTiming } from './generation/providers';
import { buildVideoProviderTable, type VideoProviderTable } from './video/video-providers';
import apiGuard from './plugins/api-guard';
import authPlugin from './plugins/auth';
import enginesPlugin, { openEngines, type Engines } from './plugins/engines';
import configPlugin from './plugins/config';
import generationPlugin from './plugins/generation';
import videosPlugin from './plugins/videos';
import hostedFilesPlugin from './plugins/hosted-files';
import imageVerifierPlugin from './plugins/image-verifier';
import provenancePlugin from './plugins/provenance';
import idempotencyPlugin from './plugins/idempotency';
import jobsPlugin from './plugins/jobs';
import type { JobEndListener } from './jobs/job-store';
import metricsPlugin from './plugins/metrics';
import providersPlugin from './plugins/providers';
import remoteFetch from './plugins/remote-fetch';
import uploadsPlugin from './plugins/uploads';
import webhooksPlugin from './plugins/webhooks';
import adminRoutes from './routes/admin';
import fileInfoRoutes from './routes/file-info';
import fileRoutes from './routes/files';
import generationRoutes from './routes/generations';
import jobRoutes from './routes/jobs';
import videoRoutes from './routes/videos';
import adminPageRoutes from './routes/admin-page';
import docsPageRoutes from './routes/docs-page';
import healthRoutes from './routes/health';
import metricsRoutes from './routes/metrics';
import mcpRoutes from './routes/mcp';
import openApiRoutes from './routes/openapi';
import provenanceRoutes from './routes/provenance';
import modelRoutes from './routes/models';
import uploadRoutes from './routes/uploads';
import usageRoutes from './routes/usage';
import webhookRoutes from './routes/webhooks';
import { serviceVersion } from './runtime/service-version';
import { openApiOptions, sharedSchemas } from './schema-docs/openapi';
import { serializerCompiler, validatorCompiler } from './schema-docs/route-schemas';
import { STREAM_HIGH_WATER_MARK } from './storage/byte-streams';

const MULTIPART_FIELD_BYTES = 1024;

export interface Service {
	app: FastifyInstance;
	/** Listens and answers the origin actually bound (the real port when 0 was asked for). */
	listen(): Promise<{ address: string; publicUrl: string }>;
	close(): Promise<void>;
}

export interface ServiceParts {
	/** Built by the caller when it checks them itself at start (the CLI); otherwise from the config. */
	providers?: ProviderTable;
	/** As `providers`, for the video models. */
	videoProviders?: VideoProviderTable;
	/** How soon the providers built from the config ask a host again; the hosts' pace unless set (a suite against stand-ins). */
	providerTiming?: ProviderTiming;
	/** Engines opened by the caller; otherwise chosen from the config (plugins/engines.ts). */
	engines?: Engines;
	/** Where the log lines go instead of stdout (a test reading what the service said). */
	logStream?: { write(line: string): void };
	/** Told when a generation's job ends. */
	jobEndListeners?: readonly JobEndListener[];
}

export async function createService(config: ServiceConfig, parts: ServiceParts = {}): Promise<Service> {
	if (config.apiKeys.length === 0) throw new Error('createService needs at least one API key');
	let publicBaseUrl = config.publicUrl ?? '';
	let closing = false;
	// First: an incomplete provider setting fails before any engine is opened.
	const providers = parts.providers ?? buildProviderTable(config, parts.providerTiming);
	const videoProviders = parts.videoProviders ?? buildVideoProviderTable(config, parts.providerTiming);
	const app = createFastify(config, parts.logStream);
	installConnectionHandling(app);
	// Answers sent while draining end their connection: a client's keep-alive must not hold the
	// shutdown open until it times out.
	app.addHook('onSend', async (_request, reply) => {
		if (closing) reply.header('connection', 'close');
	});
	const engines = parts.engines ?? (await openEngines(config, app.log.child({ component: 'engines' })));
	await registerService(app, config, {
		providers,
		videoProviders,
		engines,
		publicBaseUrl: () => publicBaseUrl,
		jobEndListeners: parts.jobEndListeners,
	});
	await app.ready();

	return {
		app,
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
			return { address: originOf(address), publicUrl: publicBaseUrl };
		},
		async close() {
			closing = true;
			// Fastify closes the connections idle at this moment; these become idle later, after the
			// answer to their last request. A chain of timeouts, not an interval: suites on a fake
			// clock move intervals by hand (test/server/support/clock.ts) and a close must not wait on them.
			let sweepIdle: NodeJS.Timeout | undefined;
			const sweep = () => {
				app.server.closeIdleConnections();
				sweepIdle = setTimeout(sweep, 100);
			};
			sweepIdle = setTimeout(sweep, 100);
			try {
				await app.close();
			} finally {
				clearTimeout(sweepIdle);
			}
		},
	};
}

function createFastify(config: ServiceConfig, logStream?: { write(line: string): void }): FastifyInstance {
	return Fastify({
		bodyLimit: config.maxJsonBytes,
		// request.ip: the connection's address, or with --trust-proxy the one the trusted proxies saw.
		trustProxy: config.trustProxy,
		// SIGTERM: new requests get a 503 and idle keep-alive connections are closed at once, while
		// requests in flight (uploads included) run to their end before close() resolves.
		return503OnClosing: true,
		forceCloseConnections: 'idle',
		logController: new LogController({ disableRequestLogging: true }),
		// Idle, not total: a 512 MB upload on a slow link may take long, but a client that sends
		// nothing while its request is incomplete is dropped (http/connections.ts keeps the server's own
		// silence, such as a running generation, out of it).
		connectionTimeout: config.idleTimeoutMs,
		clientErrorHandler: answerClientError,
		// Requests Fastify rejects before routing (a malformed URL) get our error shape too.
		frameworkErrors: (error, _request, reply) => {
			sendApiError(reply, new ImageGenError(400, `The request URL is malformed: ${error.message}`, { code: 'invalid_url' }));
		},
		logger: {
			level: config.logLevel,
			// Not pino's own destination for stdout, which freezes and then crashes the service on a full disk: see http/log-destination.ts.
			stream: logStream ?? standardOutputLog(),
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
}

async function registerService(
	app: FastifyInstance,
	config: ServiceConfig,
	parts: { providers: ProviderTable; videoProviders: VideoProviderTable; engines: Engines; publicBaseUrl: () => string; jobEndListeners?: readonly JobEndListener[] },
): Promise<void> {
	app.decorateRequest('apiKeyId', '');
	// Uploads are JSON or multipart; anything else (text/plain included) is a 415.
	app.removeContentTypeParser('text/plain');
	installErrorHandling(app, { maxJsonBytes: config.maxJsonBytes, maxUploadBytes: config.maxUploadBytes });
	// Route schemas are zod (schema-docs/route-schemas.ts); the document is drawn from them, so
	// @fastify/swagger listens before any route is added.
	app.setValidatorCompiler(validatorCompiler);
	app.setSerializerCompiler(serializerCompiler);
	for (const schema of sharedSchemas()) app.addSchema(schema);
	await app.register(swagger, openApiOptions(serviceVersion()));
	await app.register(multipart, {
		limits: {
			// Our own byte counter enforces the limit (and names the field); this is a backstop.
			fileSize: config.maxUploadBytes + 1,
			files: 1,
			fields: 4,
			parts: 6,
			fieldSize: MULTIPART_FIELD_BYTES,
		},
		// The parser's intake and its file stream: see STREAM_HIGH_WATER_MARK.
		highWaterMark: STREAM_HIGH_WATER_MARK,
		fileHwm: STREAM_HIGH_WATER_MARK,
	});

	await app.register(configPlugin, { config });
	await app.register(enginesPlugin, { engines: parts.engines });
	await app.register(authPlugin);
	await app.register(metricsPlugin);
	await app.register(providersPlugin, { providers: parts.providers, videoProviders: parts.videoProviders });
	await app.register(remoteFetch);
	await app.register(provenancePlugin);
	await app.register(hostedFilesPlugin, { publicBaseUrl: parts.publicBaseUrl });
	await app.register(idempotencyPlugin);
	await app.register(webhooksPlugin);
	await app.register(generationPlugin);
	await app.register(videosPlugin);
	await app.register(jobsPlugin, { listeners: parts.jobEndListeners });
	await app.register(uploadsPlugin);
	await app.register(imageVerifierPlugin);

	for (const routes of [healthRoutes, fileRoutes, metricsRoutes, adminPageRoutes, docsPageRoutes, openApiRoutes]) await app.register(scope(routes));
	await app.register(scope(v1Api), { prefix: '/v1' });
	await app.register(scope(mcpApi));
}

async function v1Api(v1: FastifyInstance): Promise<void> {
	await v1.register(apiGuard);
	installNotFoundHandler(v1);
	for (const routes of [modelRoutes, uploadRoutes, fileInfoRoutes, generationRoutes, jobRoutes, videoRoutes, usageRoutes, webhookRoutes, adminRoutes, provenanceRoutes]) await v1.register(scope(routes));
}

/** MCP clients authenticate and are rate limited exactly like /v1 callers. */
async function mcpApi(mcp: FastifyInstance): Promise<void> {
	await mcp.register(apiGuard);
	await mcp.register(scope(mcpRoutes));
}

function defaultPublicUrl(host: string, port: number): string {
	// A wildcard bind address is not something a client can connect to; loopback always is.
	const reachable = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '[::1]' : host.includes(':') ? `[${host}]` : host;
	return `http://${reachable}:${port}`;
}

function originOf(address: string): string {
	return address.replace(/\/$/, '');
}
