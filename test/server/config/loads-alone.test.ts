/**
 * Reading the configuration must not load what it configures: `keys list` and `--help` parse the
 * options, and loading the provider registry (and through it every provider's HTTP client) for
 * that would run the layers backwards. Checked on the built service, as the CLI loads it.
 */
import { spawnSync } from 'node:child_process';
import { join, sep } from 'node:path';
import { SERVER_CLI } from '../../helpers/server';

const BUILT = join(SERVER_CLI, '..');

/** The built files of the service that loading `module` (and running `then`) loads. */
function loadedBy(module: string, then = ''): string[] {
	const script = `
		const loaded = require(${JSON.stringify(join(BUILT, module))});
		${then}
		process.stdout.write(JSON.stringify(Object.keys(require.cache)));
	`;
	const result = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
	expect(result.stderr).toBe('');
	return (JSON.parse(result.stdout) as string[]).filter((file) => file.startsWith(BUILT)).map((file) => file.slice(BUILT.length + 1));
}

test('loading the configuration (and parsing --providers) loads no generation module', () => {
	const loaded = loadedBy('config', `loaded.parseConfig(['--providers', 'p-image=pruna|replicate'], {});`);
	expect(loaded).toContain(join('config', 'index.js'));
	expect(loaded.filter((file) => file.split(sep)[0] === 'generation')).toEqual([]);
});

test('the keys command does not load the provider registry', () => {
	const loaded = loadedBy(join('cli', 'keys-cli'));
	expect(loaded).toContain(join('config', 'index.js'));
	expect(loaded.filter((file) => file.startsWith(join('generation', 'providers')))).toEqual([]);
});
