/**
 * The service keeps each provenance record for the file's retention plus --provenance-record-days
 * (the store's `keepForMs`), keeps the prompt only with --provenance-include-prompt, and its
 * sweeper deletes a record once that time is over.
 */
import { newProvenancePayload, type NewProvenanceRecord } from '../../../server/src/provenance/provenance-records';
import { buildTestApp, type InProcessApp } from '../support/app';
import { eventually } from '../support/http';

const apps: InProcessApp[] = [];
afterEach(async () => {
	await Promise.all(apps.splice(0).map((app) => app.close()));
});

async function service(args: string[]): Promise<InProcessApp> {
	const app = await buildTestApp(args);
	apps.push(app);
	return app;
}

const record = (createdAt: Date): NewProvenanceRecord => ({
	payload: newProvenancePayload(),
	generationId: 'gen_keeping',
	model: 'p-image',
	apiKeyId: 'key_a',
	contentHash: '00'.repeat(32),
	prompt: 'a lighthouse at dusk',
	createdAt,
});

test('a record is kept for the retention plus --provenance-record-days, with the prompt only when asked', async () => {
	const plain = await service(['--retention-seconds', '3600', '--provenance-record-days', '10']);
	const made = record(new Date('2030-01-01T00:00:00Z'));
	await plain.app.provenanceRecords.create(made);
	expect(await plain.app.provenanceRecords.find(made.payload, made.createdAt)).toMatchObject({
		prompt: null,
		keptUntil: new Date(made.createdAt.getTime() + (3600 + 10 * 86_400) * 1000),
	});

	const prompted = await service(['--provenance-include-prompt']);
	const withPrompt = record(new Date('2030-01-01T00:00:00Z'));
	await prompted.app.provenanceRecords.create(withPrompt);
	expect(await prompted.app.provenanceRecords.find(withPrompt.payload, withPrompt.createdAt)).toMatchObject({
		prompt: 'a lighthouse at dusk',
		// The defaults: a day's retention and 365 days.
		keptUntil: new Date(withPrompt.createdAt.getTime() + (86_400 + 365 * 86_400) * 1000),
	});
});

test('the sweeper deletes a record once its keeping is over, and leaves one still kept', async () => {
	const app = await service(['--retention-seconds', '2', '--provenance-record-days', '0']);
	const records = app.app.provenanceRecords;
	const old = record(new Date(Date.now() - 60_000));
	const fresh = record(new Date(Date.now() + 3_600_000));
	await records.create(old);
	await records.create(fresh);
	// Read as of its own making, so only a deleted row answers null.
	expect(await eventually(async () => (await records.find(old.payload, old.createdAt)) === null)).toBe(true);
	expect(await records.find(fresh.payload, fresh.createdAt)).not.toBeNull();
});
