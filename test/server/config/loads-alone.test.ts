/**
 * Reading the configuration must not load what it configures: `keys list` and `--help` parse the
 * options, and loading the provider registry (and through it every provider's HTTP client) for
 * that would run the layers backwards. Checked on the built service, as the CLI loads it.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { SERVER_CLI } from '../../helpers/server';

const BUILT_CONFIG = join(SERVER_CLI, '..', 'config');

test('loading the configuration (and parsing --providers) loads no generation module', () => {
	const script = `
		const { parseConfig } = require(${JSON.stringify(BUILT_CONFIG)});
		parseConfig(['--providers', 'p-image=pruna|replicate'], {});
		process.stdout.write(JSON.stringify(Object.keys(require.cache)));
	`;
	const result = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
	expect(result.stderr).toBe('');
	const loaded = JSON.parse(result.stdout) as string[];
	expect(loaded.some((file) => file.includes(join('server', 'src', 'config')))).toBe(true);
	expect(loaded.filter((file) => file.includes(join('server', 'src', 'generation')))).toEqual([]);
});
