// Managed keys: generations with a managed, budgeted key vs the same with a flat --api-keys key,
// on one service with --database-url (PostgreSQL), back to back in each round. What the managed
// key adds per generation is its lookup (cached for ≤ 0.5 s) and the budget's reservation and
// settlement in PostgreSQL. Inline answers (b64_json), so no disk write blurs the difference.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { API_KEY, ROOT, SERVER_CLI, generationLoad, round, startImagegenServer, startPostgres, startProcess } from './lib.mjs';

const PRICE_USD = 0.0035;


export async function keysBench({ connections = 16, seconds = 5, rounds = 3 } = {}) {
	const dataDir = mkdtempSync(join(tmpdir(), 'imagegen-bench-keys-'));
	const postgres = await startPostgres();
	const upstream = await startProcess(join(ROOT, 'bench', 'fake-upstream.mjs'), ['0']);
	let ours;
	try {
		// The first key of a deployment, made with the CLI before the service starts; a budget no run can spend.
		const created = JSON.parse(
			execFileSync(process.execPath, [SERVER_CLI, 'keys', 'create', '--name', 'bench', '--budget-usd', '1000000', '--budget-period', 'month', '--json', '--database-url', postgres.url], { encoding: 'utf8' }),
		);
		ours = await startImagegenServer(dataDir, ['--database-url', postgres.url, '--providers', 'p-image=upstream'], { UPSTREAM_BASE_URL: `${upstream.origin}/v1`, UPSTREAM_API_KEY: 'upstream-key-123' });
		const url = `${ours.origin}/v1/images/generations`;
		await generationLoad(url, { key: API_KEY, connections, seconds: 2 });
		await generationLoad(url, { key: created.key, connections, seconds: 2 });
		const measured = [];
		let managedOk = 0;
		for (let i = 0; i < rounds; i++) {
			const flat = await generationLoad(url, { key: API_KEY, connections, seconds });
			const managed = await generationLoad(url, { key: created.key, connections, seconds });
			managedOk += managed.ok;
			measured.push({ flat, managed, ratio: round(managed.rps / flat.rps), addedP50Ms: managed.p50Ms - flat.p50Ms });
		}
		const median = [...measured].sort((x, y) => x.ratio - y.ratio)[Math.floor(rounds / 2)];
		// Every managed success must be charged exactly once (warm-up included).
		const listed = JSON.parse(execFileSync(process.execPath, [SERVER_CLI, 'keys', 'list', '--json', '--database-url', postgres.url], { encoding: 'utf8' }));
		const spentUsd = listed.data[0].budget.spent_usd;
		return { connections, seconds, ...median, rounds: measured, errors: measured.reduce((sum, r) => sum + r.flat.errors + r.managed.errors, 0), spentUsd, measuredManagedOk: managedOk, priceUsd: PRICE_USD };
	} finally {
		await Promise.all([ours?.stop(), upstream.stop()]);
		await postgres.stop();
		rmSync(dataDir, { recursive: true, force: true });
	}
}
