// Starts the built service in this process with the flags given as arguments, then prints (one JSON
// line) the packages whose modules Node has loaded, and stops. Run as a child process so that the
// list is the service's own, not the test runner's.
const { join } = require('node:path');

const dist = join(__dirname, '..', '..', '..', 'server', 'dist', 'server', 'src');
const { createService, parseConfig } = require(join(dist, 'index.js'));

/** `…/node_modules/@scope/name/lib/x.js` → `@scope/name`; files outside node_modules are ours. */
function packageOf(path) {
	const parts = path.split(/[\\/]node_modules[\\/]/);
	if (parts.length < 2) return undefined;
	const segments = parts[parts.length - 1].split(/[\\/]/);
	return segments[0].startsWith('@') ? `${segments[0]}/${segments[1]}` : segments[0];
}

async function main() {
	const config = parseConfig(process.argv.slice(2), process.env);
	const service = await createService(config);
	await service.listen();
	const packages = [...new Set(Object.keys(require.cache).map(packageOf).filter(Boolean))].sort();
	await service.close();
	process.stdout.write(`${JSON.stringify(packages)}\n`);
}

main().catch((error) => {
	process.stderr.write(`${error.stack ?? error}\n`);
	process.exit(1);
});
