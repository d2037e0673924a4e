/** Flags, environment and the CLI's own behaviour (exit codes, help, the generated key). */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, readFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, parseConfig } from '../../../server/src/config';
import { SERVER_CLI, startServer } from '../../helpers/server';
import { call } from '../support/http';

describe('parseConfig', () => {
	it('has the documented defaults', () => {
		const config = parseConfig([], {});
		expect(config).toMatchObject({
			host: '127.0.0.1',
			port: 8080,
			apiKeys: [],
			retentionSeconds: 86_400,
			allowPrivateUrls: false,
			maxUploadBytes: 512 * 1024 * 1024,
			rateLimitPerMinute: 600,
			generationTimeoutMs: 120_000,
			sandboxDelayMs: 0,
			priceOverrides: {},
		});
	});

	it('takes the sandbox’s delay from the flag or IMAGEGEN_SANDBOX_DELAY_MS, up to 600000 ms', () => {
		expect(parseConfig([], { IMAGEGEN_SANDBOX_DELAY_MS: '2500' })).toMatchObject({ sandboxDelayMs: 2500 });
		expect(parseConfig(['--sandbox-delay-ms', '600000'], { IMAGEGEN_SANDBOX_DELAY_MS: '2500' })).toMatchObject({ sandboxDelayMs: 600_000 });
	});

	it('reads IMAGEGEN_* and lets flags win', () => {
		const env = { IMAGEGEN_PORT: '9000', IMAGEGEN_RETENTION_SECONDS: '60', IMAGEGEN_ALLOW_PRIVATE_URLS: 'true', IMAGEGEN_API_KEYS: 'envkey-123456, other-key-7890', IMAGEGEN_PROVIDERS: 'p-image=replicate' };
		const config = parseConfig(['--port', '9100', '--max-upload-mb=2', '--prices', 'p-image=0.01'], env);
		expect(config).toMatchObject({
			port: 9100,
			retentionSeconds: 60,
			allowPrivateUrls: true,
			apiKeys: ['envkey-123456', 'other-key-7890'],
			maxUploadBytes: 2 * 1024 * 1024,
			providers: 'p-image=replicate',
			prices: 'p-image=0.01',
			priceOverrides: { 'p-image': 0.01 },
		});
	});

	it('reads --model-aliases and IMAGEGEN_MODEL_ALIASES as alias → model', () => {
		const config = parseConfig(['--model-aliases', 'dall-e-3=p-image, gpt-image-1=p-image'], {});
		expect(config).toMatchObject({ modelAliases: { 'dall-e-3': 'p-image', 'gpt-image-1': 'p-image' } });
		expect(parseConfig([], { IMAGEGEN_MODEL_ALIASES: 'dall-e-2=textimage-v2' })).toMatchObject({ modelAliases: { 'dall-e-2': 'textimage-v2' } });
		expect(parseConfig([], {})).toMatchObject({ modelAliases: {} });
	});

	it.each([
		[['--port', 'eighty'], /--port must be a whole number/],
		[['--port', '70000'], /--port/],
		[['--retention-seconds', '0'], /--retention-seconds/],
		[['--max-upload-mb', '-1'], /--max-upload-mb must be a positive number/],
		[['--rate-limit-per-minute', '1.5'], /--rate-limit-per-minute/],
		[['--public-url', 'ftp://x'], /--public-url/],
		[['--api-keys', 'short'], /--api-keys/],
		[['--prices', 'p-image=cheap'], /--prices: the price of 'p-image'/],
		[['--prices', 'dall-e=1'], /--prices: unknown model 'dall-e'/],
		[['--model-aliases', 'dall-e-3'], /--model-aliases: 'dall-e-3' is not of the form <alias>=<model>/],
		[['--model-aliases', 'dall-e-3=dall-e'], /--model-aliases: unknown model 'dall-e' \(known: p-image, p-image-edit, textimage-v2\)/],
		[['--model-aliases', 'p-image=textimage-v2'], /--model-aliases: 'p-image' is one of the models already, not an alias/],
		[['--model-aliases', 'dall-e-3=p-image,dall-e-3=textimage-v2'], /--model-aliases: dall-e-3 is listed twice/],
		[['--log-level', 'loud'], /--log-level/],
		[['--sandbox-delay-ms', '600001'], /--sandbox-delay-ms must be a whole number/],
		[['--sandbox-delay-ms', '-1'], /--sandbox-delay-ms/],
		[['--port'], /--port needs a value/],
		[['--colour', 'red'], /Unknown option '--colour'/],
		[['--providers', 'p-image=dalle'], /--providers: unknown provider 'dalle' for p-image/],
		[['--providers', 'p-image'], /--providers: 'p-image' is not of the form <model>=<provider>/],
		[['--storage', 'ftp'], /--storage must be one of disk, s3; got 'ftp'/],
		[['--storage', 's3'], /--s3-bucket \(IMAGEGEN_S3_BUCKET\) is required with --storage s3/],
		[['--storage', 's3', '--s3-bucket', 'Bad_Bucket'], /--s3-bucket must be a bucket name/],
		[['--storage', 's3', '--s3-bucket', 'b'], /--s3-bucket must be a bucket name/],
		[['--storage', 's3', '--s3-bucket', 'media', '--s3-endpoint', 'localhost:9000'], /--s3-endpoint must be an http\(s\) URL/],
		[['--storage', 's3', '--s3-bucket', 'media', '--s3-region', 'eu west'], /--s3-region must be a region name/],
		[['--storage', 's3', '--s3-bucket', 'media', '--s3-force-path-style=perhaps'], /--s3-force-path-style must be true or false/],
		[['--storage', 's3', '--s3-bucket', 'media', '--s3-prefix', '/abs/'], /--s3-prefix must be a key prefix/],
		[['--s3-bucket', 'media'], /--s3-bucket applies only with --storage s3/],
		[['--database-url', 'mysql://db/imagegen'], /--database-url must be a postgres:\/\/ or postgresql:\/\/ URL/],
		[['--file-delivery', 'teleport'], /--file-delivery must be one of proxy, redirect/],
		[['--file-delivery', 'redirect'], /--file-delivery redirect needs --storage s3/],
		[['--drain-timeout-seconds', '0'], /--drain-timeout-seconds must be a positive number/],
		[['--drain-timeout-seconds', 'soon'], /--drain-timeout-seconds must be a positive number/],
		[['--database-timeout-seconds', '0'], /--database-timeout-seconds must be a positive number/],
		[['--database-timeout-seconds', 'forever'], /--database-timeout-seconds must be a positive number/],
		[['--max-image-pixels', '0'], /--max-image-pixels must be a whole number from 1/],
		[['--max-image-pixels', '48e6'], /--max-image-pixels must be a whole number/],
		[['--max-image-pixels', '-5'], /--max-image-pixels must be a whole number/],
		[['--max-image-pixels'], /--max-image-pixels needs a value/],
		[['--auth-failures-per-minute', '-1'], /--auth-failures-per-minute must be a whole number/],
		[['--trust-proxy', 'yes'], /--trust-proxy must be the addresses of the proxies in front/],
		[['--trust-proxy', '1'], /--trust-proxy must be the addresses/],
		[['--trust-proxy', '10.0.0.0/33'], /--trust-proxy/],
		[['--trust-proxy', '10.0.0.1,not-an-address'], /--trust-proxy/],
		[['--trust-proxy', '10.0.0.1, 2001:db8::/129'], /--trust-proxy must be the addresses of the proxies in front .*; got '2001:db8::\/129'/],
		[['--port', '8080', 'extra'], /Unexpected argument 'extra' \(options start with --; see --help\)/],
		[['--allow-private-urls', 'false'], /Unexpected argument 'false'/],
		[['--', '--port', '1'], /Unexpected argument '--'/],
		[['-p', '1'], /Unknown option '-p'/],
		[['--port', '--host', '0.0.0.0'], /--port needs a value/],
		[['--prices', 'p-image=0.01,p-image=0.02'], /--prices: p-image is listed twice/],
		[['--prices', `p-image=${'9'.repeat(400)}`], /--prices: the price of 'p-image' must be a non-negative number/],
		[['--providers', 'p-image=replicate,p-image=pruna'], /--providers: p-image is listed twice/],
		[['--database-url', 'mysql://root:hunter2@db/imagegen'], /^(?![\s\S]*hunter2)--database-url must be/],
	])('refuses %j naming the flag', (argv, message) => {
		expect(() => parseConfig(argv as string[], {})).toThrow(ConfigError);
		expect(() => parseConfig(argv as string[], {})).toThrow(message);
	});

	it('throttles failed authentication by default and trusts no proxy unless told which', () => {
		expect(parseConfig([], {})).toMatchObject({ authFailuresPerMinute: 30, trustProxy: false });
		expect(parseConfig(['--trust-proxy', 'loopback', '--auth-failures-per-minute', '0'], {})).toMatchObject({ trustProxy: ['loopback'], authFailuresPerMinute: 0 });
		expect(parseConfig([], { IMAGEGEN_TRUST_PROXY: '10.0.0.0/8, 127.0.0.1,::1' })).toMatchObject({ trustProxy: ['10.0.0.0/8', '127.0.0.1', '::1'] });
		expect(parseConfig(['--trust-proxy', 'off'], {})).toMatchObject({ trustProxy: false });
		expect(parseConfig(['--trust-proxy', 'uniquelocal,2001:db8::/32,fd00::1'], {})).toMatchObject({ trustProxy: ['uniquelocal', '2001:db8::/32', 'fd00::1'] });
	});

	it('reads the storage, database, delivery and drain settings', () => {
		expect(parseConfig([], {})).toMatchObject({ storage: { engine: 'disk' }, databaseUrl: undefined, fileDelivery: 'proxy', drainTimeoutMs: 30_000 });
		const env = { IMAGEGEN_STORAGE: 's3', IMAGEGEN_S3_BUCKET: 'media', IMAGEGEN_S3_FORCE_PATH_STYLE: 'true', IMAGEGEN_DATABASE_URL: 'postgres://u@127.0.0.1:5432/imagegen' };
		const config = parseConfig(['--s3-endpoint', 'http://127.0.0.1:9000', '--s3-prefix', 'imagegen/', '--file-delivery', 'redirect', '--drain-timeout-seconds', '2.5'], env);
		expect(config).toMatchObject({
			storage: { engine: 's3', bucket: 'media', endpoint: 'http://127.0.0.1:9000', region: 'us-east-1', forcePathStyle: true, prefix: 'imagegen/' },
			databaseUrl: 'postgres://u@127.0.0.1:5432/imagegen',
			fileDelivery: 'redirect',
			drainTimeoutMs: 2500,
		});
	});

	it('reads --max-image-pixels: 100 MP by default (a 48 MP photo fits), from the flag or IMAGEGEN_MAX_IMAGE_PIXELS', () => {
		expect(parseConfig([], {})).toMatchObject({ maxImagePixels: 100_000_000 });
		expect(parseConfig(['--max-image-pixels', '250000000'], {})).toMatchObject({ maxImagePixels: 250_000_000 });
		expect(parseConfig([], { IMAGEGEN_MAX_IMAGE_PIXELS: '50000000' })).toMatchObject({ maxImagePixels: 50_000_000 });
		expect(() => parseConfig([], { IMAGEGEN_MAX_IMAGE_PIXELS: 'lots' })).toThrow(/--max-image-pixels \(IMAGEGEN_MAX_IMAGE_PIXELS\)/);
	});

	it('reads --marking-threads: one per core beyond the first, up to two, on every Node line', () => {
		const expected = Math.max(1, Math.min(2, availableParallelism() - 1));
		expect(parseConfig([], {})).toMatchObject({ provenance: { markingThreads: expected } });
		expect(parseConfig(['--marking-threads', '0'], {})).toMatchObject({ provenance: { markingThreads: 0 } });
		expect(parseConfig([], { IMAGEGEN_MARKING_THREADS: '3' })).toMatchObject({ provenance: { markingThreads: 3 } });
		for (const bad of ['-1', '1.5', 'two', '17']) expect(() => parseConfig(['--marking-threads', bad], {})).toThrow(/--marking-threads/);
	});

	it('parses --providers once, into the selection the provider table is built from', () => {
		const config = parseConfig(['--providers', 'p-image=replicate, textimage-v2=ideogram'], {});
		expect(typeof config !== 'string' && config.providerSelection).toEqual({ 'p-image': 'replicate', 'textimage-v2': 'ideogram' });
	});

	it('reads --flag value and --flag=value alike, the last of a repeated flag winning', () => {
		expect(parseConfig(['--port', '9000', '--port=9001', '--log-level=DEBUG', '--host', '::1'], {})).toMatchObject({ port: 9001, logLevel: 'debug', host: '::1' });
		// A value that starts with -- is given inline: alone it would read as the next flag.
		expect(parseConfig(['--s3-prefix=--x', '--storage=s3', '--s3-bucket=media'], {})).toMatchObject({ storage: { prefix: '--x' } });
	});

	it('reads a switch alone as on, and its value or variable as yes or no', () => {
		expect(parseConfig(['--allow-private-urls'], {})).toMatchObject({ allowPrivateUrls: true });
		expect(parseConfig(['--allow-private-urls=no'], { IMAGEGEN_ALLOW_PRIVATE_URLS: 'yes' })).toMatchObject({ allowPrivateUrls: false });
		expect(parseConfig([], { IMAGEGEN_ALLOW_PRIVATE_URLS: 'ON' })).toMatchObject({ allowPrivateUrls: true });
	});

	it('counts an empty or blank value as not given, and an empty flag hides its variable', () => {
		expect(parseConfig([], { IMAGEGEN_PORT: '', IMAGEGEN_RETENTION_SECONDS: '  ' })).toMatchObject({ port: 8080, retentionSeconds: 86_400 });
		expect(parseConfig(['--port='], { IMAGEGEN_PORT: '9000' })).toMatchObject({ port: 8080 });
	});

	it('answers --help and -h, and --version, instead of reading the rest', () => {
		expect(parseConfig(['--port', '1', '-h'], {})).toBe('help');
		expect(parseConfig(['--help', '--colour'], {})).toBe('help');
		expect(parseConfig(['--version', '--port', 'eighty'], {})).toBe('version');
	});

	it('names the environment variable when the bad value came from it', () => {
		expect(() => parseConfig([], { IMAGEGEN_PORT: 'x' })).toThrow(/--port \(IMAGEGEN_PORT\)/);
		expect(() => parseConfig([], { IMAGEGEN_ALLOW_PRIVATE_URLS: 'maybe' })).toThrow(/IMAGEGEN_ALLOW_PRIVATE_URLS/);
	});
});

describe('the CLI', () => {
	it('exits with 2 and a message naming the flag for a bad value', () => {
		const result = spawnSync(process.execPath, [SERVER_CLI, '--max-upload-mb', 'lots'], { encoding: 'utf8' });
		expect(result.status).toBe(2);
		expect(result.stderr).toMatch(/--max-upload-mb must be a positive number; got 'lots'/);
	});

	it('exits with 2 for redirect delivery without s3', () => {
		const result = spawnSync(process.execPath, [SERVER_CLI, '--file-delivery', 'redirect'], { encoding: 'utf8' });
		expect(result.status).toBe(2);
		expect(result.stderr).toMatch(/--file-delivery redirect needs --storage s3/);
	});

	it('prints --help with every flag and exits 0', () => {
		const result = spawnSync(process.execPath, [SERVER_CLI, '--help'], { encoding: 'utf8' });
		expect(result.status).toBe(0);
		for (const flag of ['--port', '--host', '--data-dir', '--public-url', '--api-keys', '--retention-seconds', '--allow-private-urls', '--max-upload-mb', '--rate-limit-per-minute', '--max-json-mb', '--providers', '--prices', '--generation-timeout-seconds', '--storage', '--s3-bucket', '--s3-endpoint', '--s3-region', '--s3-force-path-style', '--s3-prefix', '--database-url', '--file-delivery', '--drain-timeout-seconds', '--database-timeout-seconds', '--max-image-pixels', '--idle-timeout-seconds']) {
			expect(result.stdout).toContain(flag);
		}
	});

	it('prints its version with --version, wherever the flag stands, and exits 0', () => {
		const { version } = JSON.parse(readFileSync(join(__dirname, '../../../server/package.json'), 'utf8')) as { version: string };
		for (const argv of [['--version'], ['--port', '0', '--version']]) {
			const result = spawnSync(process.execPath, [SERVER_CLI, ...argv], { encoding: 'utf8' });
			expect(result.status).toBe(0);
			expect(result.stdout).toBe(`imagegen-server ${version}\n`);
		}
	});

	it('without keys creates one (mode 0600), prints it, and reuses it after a restart', async () => {
		const dataDir = mkdtempSync(join(tmpdir(), 'imagegen-key-'));
		try {
			const first = await startServer({ dataDir, apiKey: null });
			const key = readFileSync(join(dataDir, 'api-key'), 'utf8').trim();
			expect(key.length).toBeGreaterThanOrEqual(32);
			expect(statSync(join(dataDir, 'api-key')).mode & 0o777).toBe(0o600);
			expect(first.output()).toContain(`API key: ${key}`);
			expect(first.apiKey).toBe(key);
			expect((await call(first, '/v1/models')).status).toBe(200);
			await first.stop();

			const second = await startServer({ dataDir, apiKey: null });
			expect(second.apiKey).toBe(key);
			expect((await call(second, '/v1/models')).status).toBe(200);
			await second.stop();
		} finally {
			rmSync(dataDir, { recursive: true, force: true });
		}
	});

	it('hands out file URLs under --public-url and stops cleanly on SIGINT', async () => {
		const server = await startServer({ args: ['--public-url', 'https://files.example.test/base/'] });
		const answer = await call(server, '/v1/uploads', {
			method: 'POST',
			headers: { 'content-type': 'application/json' },
			body: JSON.stringify({ video: Buffer.from('\0\0\0\x18ftypisom\0\0\0\0isommp41', 'latin1').toString('base64') }),
		});
		expect(answer.body.videoUrl).toMatch(/^https:\/\/files\.example\.test\/base\/files\/[A-Za-z0-9_-]+\.mp4$/);
		const exited = new Promise<number | null>((resolve) => server.process.once('exit', (code) => resolve(code)));
		server.process.kill('SIGINT');
		expect(await exited).toBe(0);
		await server.stop({ removeData: true });
	});

	it('the default public URL uses the real bound port', async () => {
		const server = await startServer();
		try {
			const answer = await call(server, '/v1/uploads', {
				method: 'POST',
				headers: { 'content-type': 'application/json' },
				body: JSON.stringify({ video: Buffer.from('\0\0\0\x18ftypisom\0\0\0\0isommp41', 'latin1').toString('base64') }),
			});
			expect(answer.body.videoUrl.startsWith(`${server.origin}/files/`)).toBe(true);
			expect(server.origin).not.toMatch(/:0$/);
		} finally {
			await server.stop({ removeData: true });
		}
	});
});
