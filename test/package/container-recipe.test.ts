/**
 * The container recipe, checked without a container engine (none runs here): what the Dockerfile
 * copies exists and is not excluded from the build context, its command is the package's bin with
 * flags the CLI accepts, port and health check match the service, and the compose example uses
 * only configuration names the service reads.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { OPTIONS, defaultText, parseConfig } from '../../server/src/config';
import { startServer } from '../helpers/server';

const run = promisify(execFile);
const ROOT = join(__dirname, '..', '..');
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { N8N_VERSION } = require('../../scripts/n8n/install.cjs') as { N8N_VERSION: string };

/** Every setting the service reads from the environment: the compose file may use no other. */
const KNOWN_ENV = new Set<string>(OPTIONS.map((option) => option.env));

interface Instruction {
	keyword: string;
	argument: string;
}

/** Dockerfile instructions, continuation lines joined, comments dropped, grouped by stage. */
function stages(dockerfile: string): Instruction[][] {
	const joined = dockerfile.replace(/\\\n/g, ' ');
	const instructions = joined
		.split('\n')
		.map((line) => line.trim())
		.filter((line) => line && !line.startsWith('#'))
		.map((line) => {
			const [, keyword, argument] = /^(\S+)\s+(.*)$/.exec(line)!;
			return { keyword: keyword!.toUpperCase(), argument: argument!.trim() };
		});
	const result: Instruction[][] = [];
	for (const instruction of instructions) {
		if (instruction.keyword === 'FROM') result.push([]);
		result[result.length - 1]!.push(instruction);
	}
	return result;
}

/** The exec (JSON) form of CMD / HEALTHCHECK CMD; undefined for the shell form. */
function execForm(argument: string): string[] | undefined {
	try {
		const parsed = JSON.parse(argument);
		return Array.isArray(parsed) ? parsed : undefined;
	} catch {
		return undefined;
	}
}

/** Docker's .dockerignore matching, enough for plain names, `*` and `**`. */
function ignoredBy(patterns: string[], path: string): string | undefined {
	return patterns.find((pattern) => {
		const source = pattern
			.replace(/^\/+/, '')
			.split('/')
			.map((part) => (part === '**' ? '.*' : part.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')))
			.join('/')
			.replace(/\.\*\//g, '(?:.*/)?');
		return new RegExp(`^${source}(?:/.*)?$`).test(path);
	});
}

const dockerfile = stages(read('Dockerfile'));
const finalStage = dockerfile[dockerfile.length - 1]!;
const last = (keyword: string) => finalStage.filter((instruction) => instruction.keyword === keyword).pop();
const ignorePatterns = read('.dockerignore')
	.split('\n')
	.map((line) => line.trim())
	.filter((line) => line && !line.startsWith('#'));
const defaultPort = defaultText(OPTIONS.find((option) => option.flag === 'port')!);

describe('Dockerfile', () => {
	test('multi-stage on Node 24 slim', () => {
		expect(dockerfile.length).toBeGreaterThanOrEqual(2);
		for (const stage of dockerfile) expect(stage[0]!.argument).toMatch(/^node:24-slim(\s+AS\s+\w+)?$/i);
	});

	test('every file it copies from the build context exists and is not excluded by .dockerignore', () => {
		const copies = dockerfile.flat().filter((instruction) => instruction.keyword === 'COPY' && !instruction.argument.startsWith('--from'));
		const sources = copies.flatMap((instruction) => instruction.argument.split(/\s+/).slice(0, -1));
		expect(sources.length).toBeGreaterThan(3);
		for (const source of sources) {
			expect([source, existsSync(join(ROOT, source))]).toEqual([source, true]);
			expect([source, ignoredBy(ignorePatterns, source)]).toEqual([source, undefined]);
		}
		// The matcher above can say no: the things that must stay out are out.
		for (const excluded of ['node_modules/fastify/package.json', 'server/dist/server/src/cli.js', '.git/HEAD', 'test/helpers/server.ts']) {
			expect(ignoredBy(ignorePatterns, excluded)).toBeDefined();
		}
	});

	test('the build stage copies every source folder the published package lists in "files"', () => {
		const copied = new Set(dockerfile[0]!.filter((instruction) => instruction.keyword === 'COPY').flatMap((instruction) => instruction.argument.split(/\s+/).slice(0, -1)));
		const listed = (JSON.parse(read('server/package.json')).files as string[]).filter((entry) => !entry.startsWith('dist'));
		expect(listed).toEqual(expect.arrayContaining(['admin', 'bin']));
		expect(listed.filter((entry) => !copied.has(`server/${entry}`))).toEqual([]);
	});

	test("the final stage installs with scripts on and loads better-sqlite3's addon before the image is done", async () => {
		const install = finalStage.find((instruction) => instruction.keyword === 'RUN' && instruction.argument.includes('npm install --global'));
		expect(install?.argument).not.toMatch(/--ignore-scripts/);
		const probe = /&& node -e "([^"]+)"/.exec(install!.argument)?.[1];
		expect(probe).toContain("require('better-sqlite3')");
		// The probe itself works where the addon is in place, and fails where the package is missing.
		await expect(run(process.execPath, ['-e', probe!], { cwd: join(ROOT, 'server') })).resolves.toBeDefined();
		await expect(run(process.execPath, ['-e', probe!.replace('better-sqlite3', 'better-sqlite3-missing')], { cwd: join(ROOT, 'server') })).rejects.toThrow();
	});

	test('the service runs as a non-root user with its data on the /data volume', () => {
		const user = last('USER')?.argument;
		expect(user).toBeDefined();
		expect(['root', '0']).not.toContain(user!.split(':')[0]);
		expect(last('VOLUME')?.argument).toBe('/data');
	});

	test('CMD is the package bin in exec form (node gets SIGTERM) with flags the CLI accepts, on the exposed port', () => {
		const command = execForm(last('CMD')!.argument);
		expect(command).toBeDefined();
		const bins = Object.keys(JSON.parse(read('server/package.json')).bin);
		expect(bins).toContain(command![0]);
		const config = parseConfig(command!.slice(1), {});
		expect(config).not.toBe('help');
		expect(config).toMatchObject({ host: '0.0.0.0', dataDir: '/data', port: Number(last('EXPOSE')!.argument) });
		expect(last('EXPOSE')!.argument).toBe(defaultPort);
		expect(finalStage.some((instruction) => instruction.keyword === 'ENTRYPOINT')).toBe(false);
	});

	test("HEALTHCHECK runs node against /healthz: it passes on a running service and fails where none listens", async () => {
		const healthcheck = last('HEALTHCHECK')!.argument;
		const command = execForm(healthcheck.slice(healthcheck.indexOf('CMD') + 3).trim());
		expect(command?.[0]).toBe('node');
		expect(command!.join(' ')).toContain('/healthz');
		const probe = (port: string) =>
			run(process.execPath, command!.slice(1), { env: { ...process.env, IMAGEGEN_PORT: port }, timeout: 30_000 }).then(
				() => 0,
				(error: { code?: number }) => error.code ?? -1,
			);
		const server = await startServer();
		try {
			const port = new URL(server.origin).port;
			expect(await probe(port)).toBe(0);
			await server.stop();
			expect(await probe(port)).toBe(1);
		} finally {
			await server.stop({ removeData: true });
		}
	});
});

/** The lines of one service (or top-level section) of the compose file, by indentation. */
function composeBlock(compose: string, name: string, indent: string): string {
	const lines = compose.split('\n');
	const start = lines.findIndex((line) => line === `${indent}${name}:`);
	expect([name, start]).not.toEqual([name, -1]);
	const end = lines.findIndex((line, index) => index > start && line.trim() !== '' && !line.startsWith(`${indent} `) && !line.trim().startsWith('#'));
	return lines.slice(start, end === -1 ? undefined : end).join('\n');
}

describe('docker-compose.yml', () => {
	const compose = read('docker-compose.yml');

	test('every IMAGEGEN_* variable it sets is one the service reads', () => {
		const names = [...compose.matchAll(/^\s+(IMAGEGEN_[A-Z0-9_]+):/gm)].map((match) => match[1]!);
		expect(names.length).toBeGreaterThan(5);
		expect(names.filter((name) => !KNOWN_ENV.has(name))).toEqual([]);
		expect(KNOWN_ENV.has('IMAGEGEN_NO_SUCH_SETTING')).toBe(false);
	});

	test('the service is built from the Dockerfile with an init that forwards SIGTERM, and keeps /data on a volume', () => {
		const service = composeBlock(compose, 'imagegen', '  ');
		expect(compose).toMatch(/^x-imagegen: &imagegen\n(?: {2}.*\n)*? {2}build: \.\n/m);
		expect(compose).toMatch(/^x-imagegen: &imagegen\n(?: {2}.*\n)*? {2}init: true\n/m);
		expect(service).toContain('<<: *imagegen');
		expect(service).toMatch(/- imagegen-data:\/data/);
		expect(service).toContain(`'${defaultPort}:${defaultPort}'`);
	});

	test('n8n is the version the tests run against', () => {
		expect(composeBlock(compose, 'n8n', '  ')).toContain(`image: docker.n8n.io/n8nio/n8n:${N8N_VERSION}`);
	});

	test('the scale-out profile: PostgreSQL, MinIO, a bucket one-shot, and a service configured for both', () => {
		for (const name of ['imagegen-scale-out', 'postgres', 'minio', 'minio-bucket']) {
			expect(composeBlock(compose, name, '  ')).toMatch(/profiles: \[scale-out\]/);
		}
		const scaled = composeBlock(compose, 'imagegen-scale-out', '  ');
		expect(scaled).toMatch(/IMAGEGEN_STORAGE: s3\n/);
		expect(scaled).toMatch(/IMAGEGEN_S3_BUCKET: imagegen\n/);
		expect(scaled).toMatch(/IMAGEGEN_S3_ENDPOINT: http:\/\/minio:9000\n/);
		expect(scaled).toMatch(/IMAGEGEN_S3_FORCE_PATH_STYLE: 'true'\n/);
		expect(scaled).toMatch(/IMAGEGEN_DATABASE_URL: postgres:\/\/imagegen:.*@postgres:5432\/imagegen\n/);
		expect(scaled).toMatch(/minio-bucket:\n\s+condition: service_completed_successfully/);
		expect(composeBlock(compose, 'minio-bucket', '  ')).toContain('mc mb --ignore-existing local/imagegen');
		expect(composeBlock(compose, 'imagegen', '  ')).not.toMatch(/IMAGEGEN_(STORAGE|DATABASE_URL)/);
	});
});
