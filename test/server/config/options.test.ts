/**
 * The option rows are the one source of --help, the parsed configuration and
 * docs/configuration.md: what they show must be what the service does.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { OPTIONS, configurationMarkdown, defaultText, helpText, parseConfig, type OptionRow } from '../../../server/src/config';

const ROWS = OPTIONS as readonly OptionRow[];
const DOC = join(__dirname, '..', '..', '..', 'docs', 'configuration.md');
/** The s3 rows are read only with --storage s3, which needs a bucket; the C2PA files come as a pair. */
const PARTNERS: Record<string, string[]> = { 'c2pa-cert': ['--c2pa-key', 'key.pem'], 'c2pa-key': ['--c2pa-cert', 'chain.pem'] };
const context = (row: OptionRow) => [
	...(row.onlyWith ? ['--storage', 's3', ...(row.flag === 's3-bucket' ? [] : ['--s3-bucket', 'media'])] : []),
	...(PARTNERS[row.flag] ?? []),
];

test('each flag and variable belongs to one row, the variable named after the flag', () => {
	expect(new Set(ROWS.map((row) => row.flag)).size).toBe(ROWS.length);
	for (const row of ROWS) expect(row.env).toBe(`IMAGEGEN_${row.flag.toUpperCase().replace(/-/g, '_')}`);
});

test('a row read only with another option names an earlier row, and one of its values', () => {
	for (const [index, row] of ROWS.entries()) {
		if (!row.onlyWith) continue;
		const earlier = ROWS.slice(0, index).find((candidate) => candidate.flag === row.onlyWith!.flag);
		expect([row.flag, earlier?.flag]).toEqual([row.flag, row.onlyWith.flag]);
		expect(earlier!.type.schema.parse(row.onlyWith.value)).toBe(row.onlyWith.value);
	}
});

test.each(ROWS.filter((row) => row.defaultText === undefined).map((row) => [row.flag, row] as const))(
	'the default shown for --%s is the one used when it is not given',
	(flag, row) => {
		const shown = defaultText(row);
		expect(parseConfig([...context(row), `--${flag}=${shown}`], {})).toEqual(parseConfig(context(row), {}));
	},
);

test.each(ROWS.map((row) => [row.flag, row.env, row] as const))('--%s wins over %s', (flag, env, row) => {
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
};

test('--help lists every row with its variable and default', () => {
	const help = helpText();
	for (const row of ROWS) {
		expect(help).toContain(`--${row.flag}`);
		expect(help).toContain(`env ${row.env}; default ${defaultText(row)}`);
	}
});

test('docs/configuration.md is what the rows generate (run `npm run docs:config` after editing them)', () => {
	expect(readFileSync(DOC, 'utf8')).toBe(configurationMarkdown());
});
