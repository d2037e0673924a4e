/**
 * Per-key usage: images and cost per model and UTC day. Every generation appends one JSON line to
 * `<data-dir>/usage.jsonl` (append-only, so a crash can cost at most the line being written, which
 * is skipped on load); totals are rebuilt from that file at start and kept in memory.
 */
import { appendFile as appendFileCallback } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';

const appendFile = promisify(appendFileCallback);
import { join } from 'node:path';

export interface UsageRow {
	date: string;
	model: string;
	images: number;
	cost_usd: number;
}

interface Entry {
	t: string;
	key: string;
	model: string;
	images: number;
	cost_usd: number;
}

const roundUsd = (value: number) => Math.round(value * 1e6) / 1e6;

export class UsageLedger {
	/** apiKeyId → "date model" → totals */
	private readonly totals = new Map<string, Map<string, UsageRow>>();

	private pending: string[] = [];

	private writes: Promise<void> = Promise.resolve();

	private constructor(private readonly file: string) {}

	static async open(dataDir: string): Promise<UsageLedger> {
		const ledger = new UsageLedger(join(dataDir, 'usage.jsonl'));
		const text = await readFile(ledger.file, 'utf8').catch((error: NodeJS.ErrnoException) => {
			if (error.code === 'ENOENT') return '';
			throw error;
		});
		for (const line of text.split('\n')) {
			const entry = parseEntry(line);
			if (entry) ledger.add(entry);
		}
		return ledger;
	}

	/**
	 * Counts at once; the line reaches the disk in order, before `flushed()` resolves. Lines that
	 * arrive while a write is under way go out together in the next one, so a busy service makes
	 * one append per batch rather than one per image.
	 */
	record(apiKeyId: string, model: string, images: number, costUsd: number, at: Date = new Date()): void {
		const entry: Entry = { t: at.toISOString(), key: apiKeyId, model, images, cost_usd: costUsd };
		this.add(entry);
		this.pending.push(`${JSON.stringify(entry)}\n`);
		if (this.pending.length === 1) {
			this.writes = this.writes.then(async () => {
				const lines = this.pending.join('');
				this.pending = [];
				await appendFile(this.file, lines, { mode: 0o600 }).catch(() => undefined);
			});
		}
	}

	flushed(): Promise<void> {
		return this.writes;
	}

	/** Rows of one key between two UTC dates (inclusive, `YYYY-MM-DD`), by date then model. */
	rows(apiKeyId: string, from = '0000-00-00', to = '9999-99-99'): UsageRow[] {
		return [...(this.totals.get(apiKeyId)?.values() ?? [])]
			.filter((row) => row.date >= from && row.date <= to)
			.sort((a, b) => a.date.localeCompare(b.date) || a.model.localeCompare(b.model))
			.map((row) => ({ ...row, cost_usd: roundUsd(row.cost_usd) }));
	}

	private add(entry: Entry): void {
		const date = entry.t.slice(0, 10);
		const perKey = this.totals.get(entry.key) ?? new Map<string, UsageRow>();
		this.totals.set(entry.key, perKey);
		const row = perKey.get(`${date} ${entry.model}`) ?? { date, model: entry.model, images: 0, cost_usd: 0 };
		row.images += entry.images;
		row.cost_usd += entry.cost_usd;
		perKey.set(`${date} ${entry.model}`, row);
	}
}

function parseEntry(line: string): Entry | undefined {
	if (!line.trim()) return undefined;
	try {
		const entry = JSON.parse(line) as Entry;
		const valid =
			typeof entry.t === 'string' &&
			/^\d{4}-\d{2}-\d{2}T/.test(entry.t) &&
			typeof entry.key === 'string' &&
			typeof entry.model === 'string' &&
			Number.isFinite(entry.images) &&
			Number.isFinite(entry.cost_usd);
		return valid ? entry : undefined;
	} catch {
		return undefined;
	}
}
