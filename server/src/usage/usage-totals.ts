/**
 * Exact usage totals per API key, UTC day and model. Money is summed as integer pico-dollars
 * (BigInt), so millions of lines add up exactly whatever the order; a row is rounded to the
 * micro-dollar (half up) only when it is read, as the PostgreSQL ledger rounds its exact sum.
 *
 * The rolled totals file (`usage-totals.jsonl`) holds the days rolled out of `usage.jsonl`: a
 * header line, then one line per (day, key, model). It is always written aside, synced and renamed.
 */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { replaceWithLines } from '../durable/replace-with-lines';
import type { UsageRow } from './usage-ledger';

const PICO_PER_MICRO = 1_000_000n;

interface Total {
	date: string;
	model: string;
	images: number;
	pico: bigint;
}

/** One line of the journal or a rolled row, as counted. */
export interface Counted {
	date: string;
	key: string;
	model: string;
	images: number;
	pico: bigint;
}

/** A line's cost in pico-dollars: exact for any price of up to 12 decimals (float noise rounds away). */
export function toPico(costUsd: number): bigint {
	return BigInt(Math.round(costUsd * 1e12));
}

export class UsageTotals {
	/** apiKeyId → "date model" → total */
	private readonly byKey = new Map<string, Map<string, Total>>();

	add(line: Counted): void {
		let perKey = this.byKey.get(line.key);
		if (!perKey) this.byKey.set(line.key, (perKey = new Map()));
		const id = `${line.date} ${line.model}`;
		const total = perKey.get(id);
		if (total) {
			total.images += line.images;
			total.pico += line.pico;
		} else {
			perKey.set(id, { date: line.date, model: line.model, images: line.images, pico: line.pico });
		}
	}

	rows(apiKeyId: string, from: string, to: string): UsageRow[] {
		return [...(this.byKey.get(apiKeyId)?.values() ?? [])]
			.filter((row) => row.date >= from && row.date <= to)
			.sort((a, b) => a.date.localeCompare(b.date) || a.model.localeCompare(b.model))
			.map((row) => ({ date: row.date, model: row.model, images: row.images, cost_usd: Number((row.pico + PICO_PER_MICRO / 2n) / PICO_PER_MICRO) / 1e6 }));
	}

	/** Whether any day before `date` is counted. */
	hasDayBefore(date: string): boolean {
		for (const perKey of this.byKey.values()) for (const total of perKey.values()) if (total.date < date) return true;
		return false;
	}

	/** Every counted row of a day before `date` (a snapshot, taken synchronously). */
	rowsBefore(date: string): Counted[] {
		const rows: Counted[] = [];
		for (const [key, perKey] of this.byKey) {
			for (const total of perKey.values()) if (total.date < date) rows.push({ key, date: total.date, model: total.model, images: total.images, pico: total.pico });
		}
		return rows;
	}
}

export interface RolledHeader {
	/** Every day before this one is in the file, and no longer in the journal. */
	rolledBefore: string;
	/** The journal these rows were taken from: if it is still the current one, its lines of those days are skipped. */
	consumed: string;
}

interface RolledRowLine {
	date: string;
	key: string;
	model: string;
	images: number;
	pico_usd: string;
}

/** Reads the rolled totals into `totals`; undefined when there is no file yet. */
export async function readRolledTotals(file: string, totals: UsageTotals): Promise<RolledHeader | undefined> {
	const input = createReadStream(file);
	const missing = await new Promise<boolean>((resolve, reject) => {
		input.once('error', (error: NodeJS.ErrnoException) => (error.code === 'ENOENT' ? resolve(true) : reject(error)));
		input.once('open', () => resolve(false));
	});
	if (missing) return undefined;
	let header: RolledHeader | undefined;
	for await (const raw of createInterface({ input, crlfDelay: Infinity })) {
		if (!raw.trim()) continue;
		// Written aside and renamed, so any damage is not a crash's: refuse to start rather than miscount billing.
		const line = JSON.parse(raw) as Partial<RolledRowLine & { rolled_before: string; consumed: string }>;
		if (header === undefined) {
			if (typeof line.rolled_before !== 'string' || typeof line.consumed !== 'string') throw new Error(`${file}: the first line is not a usage totals header`);
			header = { rolledBefore: line.rolled_before, consumed: line.consumed };
			continue;
		}
		if (typeof line.date !== 'string' || typeof line.key !== 'string' || typeof line.model !== 'string' || !Number.isInteger(line.images) || typeof line.pico_usd !== 'string' || !/^-?\d+$/.test(line.pico_usd)) {
			throw new Error(`${file}: a malformed totals line`);
		}
		totals.add({ date: line.date, key: line.key, model: line.model, images: line.images!, pico: BigInt(line.pico_usd) });
	}
	if (!header) throw new Error(`${file}: empty usage totals file`);
	return header;
}

/** Writes the rolled totals aside, syncs and renames them over the old file. */
export async function writeRolledTotals(file: string, header: RolledHeader, rows: readonly Counted[]): Promise<void> {
	await replaceWithLines(file, [
		JSON.stringify({ rolled_before: header.rolledBefore, consumed: header.consumed }),
		...rows.map((row) => JSON.stringify({ date: row.date, key: row.key, model: row.model, images: row.images, pico_usd: row.pico.toString() } satisfies RolledRowLine)),
	]);
}
