// Managed keys: generations with a managed key vs the same with a flat --api-keys key, on one
// service, back to back in each round. On PostgreSQL (--database-url) the key has a budget: what
// it adds per generation is its lookup (cached for ≤ 0.5 s) and the budget's reservation and
// settlement. On the data dir (`engine: 'data-dir'`) it has a rate limit instead, so what it adds
// is its lookup and a take from its bucket in the SQLite database; `budget: true` gives it the
// budget as well. Inline answers (b64_json), so no disk write blurs the difference.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { API_KEY, ROOT, SERVER_CLI, generationLoad, round, startImagegenServer, startPostgres, startProcess } from './lib.mjs';

const PRICE_USD = 0.0035;
/** The highest a key may have, which no run reaches (a full bucket of a million, 16,667 more a second): every request takes a token, none is refused. */
const UNREACHED_RATE_LIMIT_PER_MINUTE = 1_000_000;


/** `engine`: 'postgres' (--database-url) or 'data-dir' (the embedded SQLite database). */
export async function keysBench({ connections = 16, seconds = 5, rounds = 3, engine = 'postgres', budget = engine === 'postgres' } = {}) {
	const dataDir = mkdtempSync(join(tmpdir(), 'imagegen-bench-keys-'));
	const postgres = engine === 'postgres' ? await startPostgres() : undefined;
	const upstream = await startProcess(join(ROOT, 'bench', 'fake-upstream.mjs'), ['0']);
	const database = postgres ? ['--database-url', postgres.url] : ['--data-dir', dataDir];
	const rateLimit = postgres ? [] : ['--rate-limit-per-minute', String(UNREACHED_RATE_LIMIT_PER_MINUTE)];
	let ours;
	try {
		// The first key of a deployment, made with the CLI before the service starts; a budget no run can spend.
		const budgetArgs = budget ? ['--budget-usd', '1000000', '--budget-period', 'month'] : [];
		const created = JSON.parse(
			execFileSync(process.execPath, [SERVER_CLI, 'keys', 'create', '--name', 'bench', ...budgetArgs, ...rateLimit, '--json', ...database], { encoding: 'utf8' }),
		);
		ours = await startImagegenServer(dataDir, [...(postgres ? database : []), '--providers', 'p-image=upstream'], { UPSTREAM_BASE_URL: `${upstream.origin}/v1`, UPSTREAM_API_KEY: 'upstream-key-123' });
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
		const listed = JSON.parse(execFileSync(process.execPath, [SERVER_CLI, 'keys', 'list', '--json', ...database], { encoding: 'utf8' }));
		const spentUsd = listed.data[0].budget?.spent_usd;
		return { connections, seconds, ...median, rounds: measured, errors: measured.reduce((sum, r) => sum + r.flat.errors + r.managed.errors, 0), spentUsd, measuredManagedOk: managedOk, priceUsd: PRICE_USD };
	} finally {
		await Promise.all([ours?.stop(), upstream.stop()]);
		await postgres?.stop();
		rmSync(dataDir, { recursive: true, force: true });
	}
}
