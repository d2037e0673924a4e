/**
 * The option rows are the one source of --help, the parsed configuration and
 * docs/configuration.md: what they show must be what the service does.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { OPTIONS, configurationMarkdown, defaultText, helpText, parseConfig, type OptionRow } from '../../../server/src/config';

const ROWS = OPTIONS as readonly OptionRow[];
const DOC = join(__dirname, '..', '..', '..', 'docs', 'configuration.md');
/** The s3 rows are read only with --storage s3, which needs a bucket; the C2PA files come as a pair; a host's rows only with its provider. */
const PARTNERS: Record<string, string[]> = { 'c2pa-cert': ['--c2pa-key', 'key.pem'], 'c2pa-key': ['--c2pa-cert', 'chain.pem'] };
const context = (row: OptionRow) => [
	...(row.onlyWith ? ['--storage', 's3', ...(row.flag === 's3-bucket' ? [] : ['--s3-bucket', 'media'])] : []),
	...(PARTNERS[row.flag] ?? []),
	...(row.provider ? ['--providers', `p-image=${row.provider}`] : []),
];
const FLAG_ROWS = ROWS.filter((row) => !row.environmentOnly);
/** The variables the hosts' clients read, kept by their rows (docs/providers.md). */
const HOST_PREFIXES: Record<string, string> = { upstream: 'UPSTREAM_', replicate: 'REPLICATE_', pruna: 'PRUNA_', ideogram: 'IDEOGRAM_', openai: 'OPENAI_', automatic1111: 'A1111_', comfyui: 'COMFYUI_' };

test('each flag and variable belongs to one row, the variable named after the flag (a host\'s after the host)', () => {
	expect(new Set(ROWS.map((row) => row.flag)).size).toBe(ROWS.length);
	expect(new Set(ROWS.map((row) => row.env)).size).toBe(ROWS.length);
	for (const row of ROWS) {
		const name = row.flag.toUpperCase().replace(/-/g, '_');
		if (row.provider === undefined) expect(row.env).toBe(`IMAGEGEN_${name}`);
		else expect(row.env.startsWith(HOST_PREFIXES[row.provider]!)).toBe(true);
	}
});

test('a credential has a variable and no flag: given as a flag, it is refused without being echoed', () => {
	const credentials = ROWS.filter((row) => row.environmentOnly);
	expect(credentials.map((row) => row.env).sort()).toEqual(['A1111_API_AUTH', 'IDEOGRAM_API_KEY', 'OPENAI_API_KEY', 'PRUNA_API_KEY', 'REPLICATE_API_TOKEN', 'UPSTREAM_API_KEY']);
	for (const row of credentials) {
		const refused = (() => {
			try {
				parseConfig([...context(row), `--${row.flag}=secret-value:1`], {});
			} catch (error) {
				return (error as Error).message;
			}
			return 'accepted';
		})();
		expect(refused).toContain(row.env);
		expect(refused).not.toContain('secret-value');
	}
});

test('a row read only with another option names an earlier row, and one of its values', () => {
	for (const [index, row] of ROWS.entries()) {
		if (!row.onlyWith) continue;
		const earlier = ROWS.slice(0, index).find((candidate) => candidate.flag === row.onlyWith!.flag);
		expect([row.flag, earlier?.flag]).toEqual([row.flag, row.onlyWith.flag]);
		expect(earlier!.type.schema.parse(row.onlyWith.value)).toBe(row.onlyWith.value);
	}
});

test.each(FLAG_ROWS.filter((row) => row.defaultText === undefined || row.provider !== undefined).map((row) => [row.flag, row] as const))(
	'the default shown for --%s is the one used when it is not given',
	(flag, row) => {
		const shown = defaultText(row);
		if (shown.startsWith('(')) return;
		expect(parseConfig([...context(row), `--${flag}=${shown}`], {})).toEqual(parseConfig(context(row), {}));
	},
);

test.each(FLAG_ROWS.map((row) => [row.flag, row.env, row] as const))('--%s wins over %s', (flag, env, row) => {
	// Any value the row accepts: its default, or the example written in its own help.
	const sample = row.defaultText === undefined ? defaultText(row) : SAMPLES[flag]!;
	const bad = 'not-a-valid-value';
	const fromFlag = parseConfig([...context(row), `--${flag}=${sample}`], { [env]: bad });
	expect(fromFlag).toEqual(parseConfig([...context(row), `--${flag}=${sample}`], {}));
});

/** A valid value for each option whose default is written out in words. */
const SAMPLES: Record<string, string> = {
	'public-url': 'https://files.example.test',
	'api-keys': 'key-0123456789',
	providers: 'p-image=replicate',
	prices: 'p-image=0.01',
	'model-aliases': 'dall-e-3=p-image',
	'comfyui-workflow': 'p-image=./flux.json',
	's3-bucket': 'other-bucket',
	's3-endpoint': 'http://127.0.0.1:9000',
	's3-prefix': 'imagegen/',
	'database-url': 'postgres://u@127.0.0.1/imagegen',
	'admin-key': 'admin-key-0123456789',
	'alert-webhook': 'https://hooks.slack.com/services/T000/B000/XXXX',
	'trust-proxy': 'loopback',
	'c2pa-cert': 'chain.pem',
	'c2pa-key': 'key.pem',
	'marking-threads': '1',
	'upstream-base-url': 'https://imagegen.example.test/v1',
	'replicate-model-versions': 'p-image=acme/p-image-fork:5c7d5dc6dd8bf75c1acaa8565735e7986bc5b66206b55cca93cb72c9bf15ccaa',
	'openai-image-sizes': '512x512',
	'a1111-base-url': 'http://gpu-box:7860',
	'a1111-steps': '30',
	'comfyui-base-url': 'http://127.0.0.1:8188',
};

test.each(ROWS.filter((row) => row.provider !== undefined).map((row) => [row.env, row] as const))(
	'%s is read only when --providers names its host, and checked then',
	(env, row) => {
		const bad = row.environmentOnly ? undefined : 'not-a-valid-value';
		expect(parseConfig([], { [env]: bad ?? 'x' })).toEqual(parseConfig([], {}));
		if (bad !== undefined && row.type.schema.safeParse(bad).success === false) {
			expect(() => parseConfig(context(row), { [env]: bad })).toThrow(`--${row.flag} (${env})`);
		}
	},
);

test('--help lists every row with its variable and default', () => {
	const help = helpText();
	for (const row of ROWS) {
		if (row.environmentOnly) {
			expect(help).toContain(`\n  ${row.env}`);
			expect(help).not.toContain(`--${row.flag}`);
		} else {
			expect(help).toContain(`--${row.flag}`);
		}
		expect(help).toMatch(new RegExp(`env ${row.env}[^\n]*; default ${defaultText(row).replace(/[()|.*+?[\]\\]/g, '\\$&')}\n`));
	}
});

test('docs/configuration.md is what the rows generate (run `npm run docs:config` after editing them)', () => {
	expect(readFileSync(DOC, 'utf8')).toBe(configurationMarkdown());
});
