/**
 * docs/providers.md names each host's settings where it explains the host; the option rows are
 * what the service reads. Both must name the same variables (and flags).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { OPTIONS, type OptionRow } from '../../server/src/config';

const page = readFileSync(join(__dirname, '..', '..', 'docs', 'providers.md'), 'utf8');
const providerRows = (OPTIONS as readonly OptionRow[]).filter((row) => row.provider !== undefined);

test.each(providerRows.map((row) => [row.env, row] as const))('docs/providers.md names %s, and its flag where it has one', (env, row) => {
	expect(page).toContain(`\`${env}\``);
	if (!row.environmentOnly) expect(page).toContain(`\`${env}\` / \`--${row.flag}\``);
	else expect(page).not.toContain(`--${row.flag}`);
});

test('every provider variable docs/providers.md names is one the service reads', () => {
	const named = new Set(page.match(/\b(UPSTREAM|REPLICATE|PRUNA|IDEOGRAM|OPENAI|A1111|COMFYUI)_[A-Z0-9_]+/g));
	expect([...named].sort()).toEqual(providerRows.map((row) => row.env).sort());
});
