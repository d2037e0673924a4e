// The layers of server/src (server/src/README.md), checked by test/server/layers.test.ts and by
// `npx depcruise server/src core`. A folder belongs to exactly one layer; a new folder must be
// placed in one here before it may import anything.
const FOUNDATIONS = ['config', 'runtime', 'http', 'net', 'media', 'db', 'telemetry'];
const DOMAIN = ['keys', 'usage', 'idempotency', 'limits', 'provenance', 'metrics', 'storage', 'uploads', 'generation', 'video', 'jobs', 'schema-docs', 'webhooks'];
// mcp/ reaches the services through the instance's decorators, as routes do: it is wiring.
const WIRING = ['plugins', 'routes', 'cli', 'mcp'];

const any = (folders) => `(${folders.join('|')})`;
/** A module of the service's top layer: a root entry point (app.ts, index.ts, cli.ts) or a folder of `folders`. */
const above = (folders) => `^server/src/(${any(folders)}/|[^/]+$)`;

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
	forbidden: [
		{
			name: 'no-folder-cycles',
			comment: 'Two folders that import each other are one responsibility split in two, or a layer upside down.',
			scope: 'folder',
			severity: 'error',
			from: { path: '^(server/src|core)/' },
			to: { circular: true },
		},
		{
			name: 'foundations-stand-alone',
			comment: `The foundations (${FOUNDATIONS.join(', ')}) import only core/ and their own folder.`,
			severity: 'error',
			from: { path: `^server/src/${any(FOUNDATIONS)}/` },
			to: { path: '^server/src/', pathNot: '^server/src/$1/' },
		},
		{
			name: 'domain-below-wiring',
			comment: 'Domain folders know nothing of fastify plugins, routes, commands or entry points; those wire them.',
			severity: 'error',
			from: { path: `^server/src/${any(DOMAIN)}/` },
			to: { path: above(WIRING) },
		},
		{
			name: 'routes-and-plugins-apart',
			comment: 'Routes reach the plugins only through the fastify decorators they declare; plugins never serve a route.',
			severity: 'error',
			from: { path: '^server/src/(plugins|routes)/' },
			to: { path: above(['plugins', 'routes', 'cli']), pathNot: '^server/src/$1/' },
		},
		{
			name: 'commands-stay-light',
			comment: 'The keys and backup commands start without the HTTP stack or the provider registry.',
			severity: 'error',
			from: { path: '^server/src/cli/' },
			to: { path: above(['plugins', 'routes', 'generation', 'mcp', 'uploads']) },
		},
		{
			name: 'folders-are-placed',
			comment: 'Every folder of server/src belongs to a layer: add a new one to .dependency-cruiser.cjs and server/src/README.md.',
			severity: 'error',
			from: { path: '^server/src/[^/]+/', pathNot: `^server/src/${any([...FOUNDATIONS, ...DOMAIN, ...WIRING])}/` },
			to: {},
		},
		{
			name: 'service-uses-only-core',
			comment: 'Of the n8n package the service shares core/ alone; tests and benchmarks are not part of it.',
			severity: 'error',
			from: { path: '^server/src/' },
			to: { path: '^(nodes|credentials|test|bench|scripts|index\\.ts)' },
		},
		{
			name: 'core-stays-pure',
			comment: 'core/ is shared with the nodes, which n8n lets import only a few packages.',
			severity: 'error',
			from: { path: '^core/' },
			to: { path: '^(server|nodes|credentials)/' },
		},
	],
	options: {
		tsPreCompilationDeps: true,
		includeOnly: '^(server/src|core|nodes|credentials|test|bench|scripts|index\\.ts)',
		doNotFollow: { path: 'node_modules' },
	},
};
