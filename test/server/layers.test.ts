/**
 * The layers of server/src (server/src/README.md) hold: dependency-cruiser checks every import of
 * the service against .dependency-cruiser.cjs. The same rules are run on a small tree that breaks
 * each of them, so a rule that no longer matches anything fails here instead of passing silently.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const ROOT = join(__dirname, '..', '..');
const CRUISER = join(ROOT, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');
const CONFIG = join(ROOT, '.dependency-cruiser.cjs');

function cruise(cwd: string, paths: string[]): { status: number | null; output: string } {
	const result = spawnSync(process.execPath, [CRUISER, ...paths, '--config', CONFIG, '--output-type', 'err'], { cwd, encoding: 'utf8' });
	return { status: result.status, output: result.stdout + result.stderr };
}

test('every import of the service keeps to its layers, with no cycle between folders', () => {
	const { status, output } = cruise(ROOT, ['server/src', 'core']);
	expect(output).toMatch(/no dependency violations found \((\d{3,}) modules/);
	expect(status).toBe(0);
});

describe('each rule catches what it forbids', () => {
	const tree = mkdtempSync(join(tmpdir(), 'imagegen-layers-'));
	const write = (path: string, imports: string[] = []) => {
		mkdirSync(join(tree, dirname(path)), { recursive: true });
		writeFileSync(join(tree, path), `${imports.map((from, index) => `import * as m${index} from '${from}';`).join('\n')}\nexport const used = [${imports.map((_, index) => `m${index}`).join(', ')}];\n`);
	};
	write('core/errors.ts', ['../server/src/app']);
	write('server/src/app.ts');
	write('server/src/http/error-handler.ts', ['../keys/authenticate']);
	write('server/src/keys/authenticate.ts', ['../usage/usage-ledger']);
	write('server/src/usage/usage-ledger.ts', ['../keys/authenticate', '../routes/usage']);
	write('server/src/routes/usage.ts', ['../plugins/config']);
	write('server/src/plugins/config.ts');
	write('server/src/cli/keys-cli.ts', ['../generation/providers']);
	write('server/src/generation/providers.ts', ['../../../nodes/ImageGen/ImageGen.node']);
	write('nodes/ImageGen/ImageGen.node.ts');
	write('server/src/misc/helpers.ts', ['../http/error-handler']);
	const { status, output } = cruise(tree, ['server/src', 'core']);
	// One violation per block, the path of a cycle on the lines below its first.
	const violations = output.split(/\n(?=\s*error )/).map((block) => block.replace(/\s+/g, ' ').trim());
	afterAll(() => rmSync(tree, { recursive: true, force: true }));

	it('fails the check', () => expect(status).not.toBe(0));

	it.each([
		['no-folder-cycles', 'server/src/keys', 'server/src/usage'],
		['foundations-stand-alone', 'server/src/http/error-handler.ts', 'server/src/keys/authenticate.ts'],
		['domain-below-wiring', 'server/src/usage/usage-ledger.ts', 'server/src/routes/usage.ts'],
		['routes-and-plugins-apart', 'server/src/routes/usage.ts', 'server/src/plugins/config.ts'],
		['commands-stay-light', 'server/src/cli/keys-cli.ts', 'server/src/generation/providers.ts'],
		['folders-are-placed', 'server/src/misc/helpers.ts', 'server/src/http/error-handler.ts'],
		['service-uses-only-core', 'server/src/generation/providers.ts', 'nodes/ImageGen/ImageGen.node.ts'],
		['core-stays-pure', 'core/errors.ts', 'server/src/app.ts'],
	])('%s: %s → %s', (rule, from, to) => {
		expect(violations.some((violation) => violation.startsWith(`error ${rule}: ${from} → `) && violation.includes(to))).toBe(true);
	});
});
