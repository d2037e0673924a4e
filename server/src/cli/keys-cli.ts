/**
 * `imagegen-server keys create|list|revoke|rotate`: managing keys from a shell, on the same
 * configuration as the service (--data-dir, --database-url and their environment variables),
 * whether or not a service runs: the first key of a new deployment is made this way. A running
 * service sees the change within a second (its key cache lasts half a second; the data dir's
 * database is shared by both processes). Exit codes: 0 done, 1 failed (no such key, engine unreachable),
 * 2 bad usage.
 */
import { parseArgs } from 'node:util';
import { ImageGenError } from '../../../core/errors';
import { lacksValue, parseConfig, SERVICE_ARG_OPTIONS, type ServiceConfig } from '../config';
import { openDatabase } from '../db/postgres/postgres';
import { createKeySchema, keyIdSchema, parseAdmin, rotateKeySchema } from '../keys/key-schemas';
import { openSqliteDatabase } from '../db/sqlite/database';
import { SqliteAdapter } from '../db/sqlite/sqlite-adapter';
import { SqlKeyStore } from '../keys/sql-key-store';
import { StoreClock } from '../keys/store-clock';
import { KeyAdmin, type KeyObject } from '../keys/key-admin';
import { escapeUnsafeCharacters } from '../keys/unsafe-text';
import { reportUsageError, UsageError, USAGE_EXIT_CODE, type CommandOutput } from './usage-error';

/** Flags of the keys commands; everything else is the service's configuration. */
const KEY_FLAGS = {
	name: 'name',
	models: 'models',
	'budget-usd': 'budget_usd',
	'budget-period': 'budget_period',
	'rate-limit-per-minute': 'rate_limit_per_minute',
	'expires-at': 'expires_at',
	'grace-seconds': 'grace_seconds',
} as const;
type KeyFlag = keyof typeof KEY_FLAGS;
const FIELD_TO_FLAG = Object.fromEntries(Object.entries(KEY_FLAGS).map(([flag, field]) => [field, `--${flag}`])) as Record<string, string>;

const KEYS_HELP = `Usage: imagegen-server keys <command> [options]

Manage API keys on the service's own engine (PostgreSQL with --database-url, else the data dir),
with or without a running service.

Commands:
  create --name <name> [--models a,b] [--budget-usd <usd>] [--budget-period day|month|total]
         [--rate-limit-per-minute <n>] [--expires-at <ISO 8601>]
                          Issue a key; its secret is printed once
  list                    Keys with their limits and spend
  revoke <id>             Refuse the key from the next request on (its files and usage stay)
  rotate <id> [--grace-seconds <n>]
                          New secret; the old one keeps working for n seconds (default 0)

Options:
  --json                  Print the answer as the admin API's JSON
  --data-dir, --database-url (and IMAGEGEN_DATA_DIR, IMAGEGEN_DATABASE_URL) as for the service
`;

export async function runKeysCommand(argv: readonly string[], env: NodeJS.ProcessEnv, output: CommandOutput): Promise<number> {
	let parsed: ParsedCommand;
	try {
		parsed = parseCommand(argv, env);
	} catch (error) {
		return reportUsageError('keys', error, output);
	}
	if (parsed.command === 'help') {
		output.out(KEYS_HELP);
		return 0;
	}
	let store: { admin: KeyAdmin; close(): Promise<void> };
	try {
		store = await openKeyAdmin(parsed.config);
	} catch (error) {
		output.err(`imagegen-server keys: ${(error as Error).message}\n`);
		return 1;
	}
	try {
		return await execute(parsed, store.admin, output);
	} catch (error) {
		if (error instanceof ImageGenError && error.status === 400) {
			const flag = (error.param && FIELD_TO_FLAG[error.param.replace(/\[\d+\]$/, '')]) ?? error.param;
			output.err(`imagegen-server keys: ${flag ? `${flag}: ` : ''}${error.message}\n`);
			return USAGE_EXIT_CODE;
		}
		output.err(`imagegen-server keys: ${(error as Error).message}\n`);
		return 1;
	} finally {
		await store.close();
	}
}

interface ParsedCommand {
	command: 'create' | 'list' | 'revoke' | 'rotate' | 'help';
	id?: string;
	fields: Partial<Record<KeyFlag, string>>;
	json: boolean;
	config: ServiceConfig;
}

function parseCommand(argv: readonly string[], env: NodeJS.ProcessEnv): ParsedCommand {
	const [command, ...rest] = argv;
	const help: ParsedCommand = { command: 'help', fields: {}, json: false, config: undefined as never };
	if (command === undefined || command === '--help' || command === '-h' || command === 'help') return help;
	if (!['create', 'list', 'revoke', 'rotate'].includes(command)) throw new UsageError(`unknown command '${command}' (create, list, revoke, rotate; see --help)`);
	const keyOptions = Object.fromEntries(Object.keys(KEY_FLAGS).map((flag) => [flag, { type: 'string' as const }]));
	const { tokens } = parseArgs({
		args: rest,
		options: { ...SERVICE_ARG_OPTIONS, ...keyOptions, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
		strict: false,
		allowPositionals: true,
		tokens: true,
	});
	const fields: Partial<Record<KeyFlag, string>> = {};
	const serviceArgs: string[] = [];
	const positional: string[] = [];
	let json = false;
	for (const token of tokens) {
		if (token.kind !== 'option') {
			if (token.kind === 'positional') positional.push(token.value);
		} else if (token.name === 'help') {
			return help;
		} else if (token.name === 'json') {
			json = true;
		} else if (Object.hasOwn(KEY_FLAGS, token.name)) {
			if (lacksValue(token)) throw new UsageError(`--${token.name} needs a value (or --${token.name}=<value>)`);
			fields[token.name as KeyFlag] = token.value;
		} else {
			// A service option as written (with its value): the service's own parser reads it, or refuses it by name.
			serviceArgs.push(...rest.slice(token.index, token.index + (token.inlineValue === false ? 2 : 1)));
		}
	}
	const allowed: Record<string, KeyFlag[]> = {
		create: ['name', 'models', 'budget-usd', 'budget-period', 'rate-limit-per-minute', 'expires-at'],
		list: [],
		revoke: [],
		rotate: ['grace-seconds'],
	};
	for (const flag of Object.keys(fields) as KeyFlag[]) {
		if (!allowed[command]!.includes(flag)) throw new UsageError(`--${flag} does not apply to 'keys ${command}'`);
	}
	// Environment variables of the service's own flags that a keys command reads apply; the rest are ignored.
	const config = parseConfig(serviceArgs, env);
	if (typeof config === 'string') return help;
	const needsId = command === 'revoke' || command === 'rotate';
	if (positional.length !== (needsId ? 1 : 0)) {
		throw new UsageError(needsId ? `'keys ${command}' takes one key id, e.g. keys ${command} key_AbC123…` : `'keys ${command}' takes no arguments; got '${positional.join(' ')}'`);
	}
	return { command: command as ParsedCommand['command'], id: positional[0], fields, json, config };
}

async function openKeyAdmin(config: ServiceConfig): Promise<{ admin: KeyAdmin; close(): Promise<void> }> {
	if (config.databaseUrl !== undefined) {
		const database = await openDatabase(config.databaseUrl, { maxConnections: 2 });
		const store = new SqlKeyStore(database);
		const clock = new StoreClock(store);
		return { admin: new KeyAdmin(store, { now: () => clock.now() }), close: () => database.close() };
	}
	const adapter = new SqliteAdapter(openSqliteDatabase(config.dataDir));
	return { admin: new KeyAdmin(new SqlKeyStore(adapter)), close: () => adapter.close() };
}

async function execute(parsed: ParsedCommand, admin: KeyAdmin, output: CommandOutput): Promise<number> {
	const print = (value: unknown, human: string) => output.out(`${parsed.json ? printableJson(value) : human}\n`);
	switch (parsed.command) {
		case 'create': {
			const { fields } = parsed;
			const request = parseAdmin(createKeySchema, {
				name: fields.name,
				models: fields.models === undefined ? undefined : fields.models.split(',').map((model) => model.trim()).filter(Boolean),
				budget_usd: numberOf(fields['budget-usd']),
				budget_period: fields['budget-period'],
				rate_limit_per_minute: numberOf(fields['rate-limit-per-minute']),
				expires_at: fields['expires-at'],
			});
			const created = await admin.create(request);
			print(created, `${describe(created)}\n  secret: ${created.key}\n  (shown only now: store it where the client keeps its secrets)`);
			return 0;
		}
		case 'list': {
			const keys = await admin.list();
			print({ object: 'list', data: keys }, keys.length === 0 ? 'No managed keys.' : keys.map(describe).join('\n'));
			return 0;
		}
		case 'revoke': {
			const id = parseAdmin(keyIdSchema, parsed.id, 'id');
			if (!(await admin.revoke(id))) return notFound(id, output);
			print({ id, object: 'api_key', revoked: true }, `Revoked ${id}: refused from the next request on.`);
			return 0;
		}
		case 'rotate': {
			const id = parseAdmin(keyIdSchema, parsed.id, 'id');
			const { grace_seconds: grace } = parseAdmin(rotateKeySchema, { grace_seconds: numberOf(parsed.fields['grace-seconds']) });
			const rotated = await admin.rotate(id, grace ?? 0);
			if (!rotated) return notFound(id, output);
			const until = grace ? `the old secret works for ${grace} more seconds` : 'the old secret no longer works';
			print(rotated, `${describe(rotated)}\n  new secret: ${rotated.key}\n  (shown only now; ${until})`);
			return 0;
		}
		default:
			return USAGE_EXIT_CODE;
	}
}

function notFound(id: string, output: CommandOutput): number {
	output.err(`imagegen-server keys: no key '${id}' (it never existed or was revoked)\n`);
	return 1;
}

/** Numbers as numbers, so the schema names a bad value; anything unreadable stays a string and is refused by type. */
function numberOf(text: string | undefined): number | string | undefined {
	if (text === undefined) return undefined;
	return /^-?\d+(\.\d+)?$/.test(text.trim()) ? Number(text) : text;
}

/**
 * JSON.stringify escapes C0 controls inside strings but not C1 controls or bidi overrides, which a
 * name stored by an older version may hold. Its only raw newlines are its own line breaks.
 */
function printableJson(value: unknown): string {
	return JSON.stringify(value, null, 2).split('\n').map(escapeUnsafeCharacters).join('\n');
}

function describe(key: KeyObject): string {
	const limits = [
		key.models ? `models ${key.models.join(',')}` : 'every model',
		key.budget
			? `budget $${key.budget.spent_usd} of $${key.budget.limit_usd} (${key.budget.period}${key.budget.resets_at ? `, resets ${key.budget.resets_at}` : ''})`
			: 'no budget',
		key.rate_limit_per_minute ? `${key.rate_limit_per_minute}/min` : 'default rate limit',
		key.expires_at ? `expires ${key.expires_at}` : 'no expiry',
		...(key.blocked ? ['BLOCKED'] : []),
	];
	return `${key.id}  ${key.prefix}…  ${escapeUnsafeCharacters(key.name)}\n  ${limits.join('; ')}`;
}
