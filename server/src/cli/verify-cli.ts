/**
 * `imagegen-server verify FILE`: what an image file carries — its C2PA manifest, its watermark and
 * the generation the watermark names — read offline from the service's own engine (the data dir's
 * database, or PostgreSQL with --database-url), with or without a running service. The operator
 * asks, so the generation is named whichever key made it. Prints the JSON that
 * POST /v1/provenance/verify answers. Exit codes: 0 a watermark was found, 1 none was (or the
 * database could not be read), 2 bad usage (no such file, not an image).
 */
import { existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ImageGenError } from '../../../core/errors';
import { formatBytes } from '../../../core/units';
import { parseConfig, SERVICE_ARG_OPTIONS, type ServiceConfig } from '../config';
import { openDatabase } from '../db/postgres/postgres';
import { databasePath, openSqliteDatabase } from '../db/sqlite/database';
import { SqliteAdapter } from '../db/sqlite/sqlite-adapter';
import type { SqlAdapter } from '../db/sql-adapter';
import { recordKeepingMs, type ProvenanceRecordStore } from '../provenance/provenance-records';
import { SqlProvenanceStore } from '../provenance/sql-provenance-store';
import { checkedImage, verifyImage, VERIFY_MAX_BYTES, type VerifyAnswer } from '../provenance/verify-image';
import { detectWatermarkInImage } from '../provenance/watermark/encoded-image';
import { reportUsageError, UsageError, type CommandOutput } from './usage-error';

const VERIFY_HELP = `Usage: imagegen-server verify <file> [options]

Prints what an image carries, as POST /v1/provenance/verify answers it (JSON): its C2PA manifest
(present, valid, signer, digital source type), its watermark (found, algorithm, payload) and the
generation the watermark names, looked up in the service's records whichever key made it.
Works offline, with or without a running service.

Exit codes: 0 a watermark was found, 1 none was, 2 bad usage (no such file, not an image).

Options:
  --data-dir, --database-url (and IMAGEGEN_DATA_DIR, IMAGEGEN_DATABASE_URL) as for the service
  --max-image-pixels <n>  Largest picture decoded, as for the service
`;

const NOT_FOUND_EXIT_CODE = 1;

interface VerifyRequest {
	file: string;
	config: ServiceConfig;
}

export async function runVerifyCommand(argv: readonly string[], env: NodeJS.ProcessEnv, output: CommandOutput): Promise<number> {
	let request: VerifyRequest | 'help';
	let bytes: Buffer;
	try {
		request = parseRequest(argv, env);
		if (request === 'help') {
			output.out(VERIFY_HELP);
			return 0;
		}
		bytes = await readImageFile(request.file);
	} catch (error) {
		return reportUsageError('verify', error, output);
	}
	let records: { store: Pick<ProvenanceRecordStore, 'find'>; close(): Promise<void> };
	try {
		records = await openRecords(request.config);
	} catch (error) {
		output.err(`imagegen-server verify: ${(error as Error).message}\n`);
		return NOT_FOUND_EXIT_CODE;
	}
	try {
		const answer = await verifyFile(bytes, request, records.store);
		output.out(`${JSON.stringify(answer, null, 2)}\n`);
		return answer.watermark.found ? 0 : NOT_FOUND_EXIT_CODE;
	} catch (error) {
		// The file is not an image, or not one this configuration decodes: the command line's file is at fault.
		if (error instanceof ImageGenError && error.status < 500) return reportUsageError('verify', new UsageError(error.message), output);
		output.err(`imagegen-server verify: ${(error as Error).message}\n`);
		return NOT_FOUND_EXIT_CODE;
	} finally {
		await records.close();
	}
}

function verifyFile(bytes: Buffer, request: VerifyRequest, records: Pick<ProvenanceRecordStore, 'find'>): Promise<VerifyAnswer> {
	const { maxImagePixels } = request.config;
	const image = checkedImage(bytes, request.file, { maxBytes: VERIFY_MAX_BYTES, maxPixels: maxImagePixels });
	return verifyImage(image, {
		records,
		caller: { operator: true },
		readWatermark: (checked) => detectWatermarkInImage(checked.bytes, { limitInputPixels: maxImagePixels }),
	});
}

function parseRequest(argv: readonly string[], env: NodeJS.ProcessEnv): VerifyRequest | 'help' {
	const { tokens } = parseArgs({
		args: [...argv],
		options: { ...SERVICE_ARG_OPTIONS, help: { type: 'boolean', short: 'h' } },
		strict: false,
		allowPositionals: true,
		tokens: true,
	});
	const files: string[] = [];
	const serviceArgs: string[] = [];
	for (const token of tokens) {
		if (token.kind === 'positional') files.push(token.value);
		else if (token.kind === 'option' && token.name === 'help') return 'help';
		// A service option as written (with its value): the service's own parser reads it, or refuses it by name.
		else if (token.kind === 'option') serviceArgs.push(...argv.slice(token.index, token.index + (token.inlineValue === false ? 2 : 1)));
	}
	if (files.length === 0) throw new UsageError('name the image FILE to check (see --help)');
	if (files.length > 1) throw new UsageError(`checks one file at a time; got ${files.length}: ${files.join(' ')}`);
	const config = parseConfig(serviceArgs, env);
	if (typeof config === 'string') return 'help';
	return { file: resolve(files[0]!), config };
}

/** The file's bytes, within the bound a check holds in memory. */
async function readImageFile(file: string): Promise<Buffer> {
	let size: number;
	try {
		const found = await stat(file);
		if (!found.isFile()) throw new UsageError(`${file} is not a file`);
		size = found.size;
	} catch (error) {
		if (error instanceof UsageError) throw error;
		throw new UsageError(`${file}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message}`);
	}
	if (size > VERIFY_MAX_BYTES) throw new UsageError(`${file} is larger than the ${formatBytes(VERIFY_MAX_BYTES)} an image to verify may be`);
	return readFile(file);
}

/**
 * The records the service keeps, on its own engine. A data dir without a database holds none:
 * nothing is created to say so.
 */
async function openRecords(config: ServiceConfig): Promise<{ store: Pick<ProvenanceRecordStore, 'find'>; close(): Promise<void> }> {
	const storeOn = (adapter: SqlAdapter) =>
		new SqlProvenanceStore(adapter, { keepForMs: recordKeepingMs(config.retentionSeconds, config.provenanceRecordDays), includePrompt: config.provenance.includePrompt });
	if (config.databaseUrl !== undefined) {
		const database = await openDatabase(config.databaseUrl, { maxConnections: 2 });
		return { store: storeOn(database), close: () => database.close() };
	}
	if (!existsSync(databasePath(config.dataDir))) return { store: { find: async () => null }, close: async () => undefined };
	const adapter = new SqliteAdapter(openSqliteDatabase(config.dataDir));
	return { store: storeOn(adapter), close: () => adapter.close() };
}
