/**
 * Usage lines the database could not take yet, kept on this replica's disk (`<data-dir>`), so that
 * a replica shut down or killed during a database outage loses no billing line. Each process writes
 * its own `usage-pending-<id>.jsonl`; a replica that starts claims every such file it finds (by
 * renaming it, so two starting replicas never take the same one) and writes its lines. The request
 * id is the table's key, so a line written twice (kept, then written by its own replica after all)
 * counts once.
 */
import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, open, readdir, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { UsageEntry } from './usage-ledger';
import type { UsageLine } from './usage-lines';

const PREFIX = 'usage-pending-';
const SUFFIX = '.jsonl';

/** A kept line: the entry and this replica's time when it was recorded (usage-lines.ts stamps by its age). */
export type PendingUsage = UsageLine;

export interface PendingUsageLog {
	error(details: object, message: string): void;
}

export class PendingUsageFile {
	private readonly id = randomUUID();
	/** This process's own file and the files it claimed; all removed by `forget()`. */
	private readonly owned = new Set<string>();
	private readonly file: string;
	/** Appends and removals in order: a removal never overtakes the append before it. */
	private chain: Promise<unknown> = Promise.resolve();

	constructor(
		private readonly directory: string,
		private readonly log: PendingUsageLog,
	) {
		this.file = join(directory, `${PREFIX}${this.id}${SUFFIX}`);
	}

	/** Appends the lines and syncs them to disk before it resolves. */
	keep(lines: readonly PendingUsage[]): Promise<void> {
		return this.enqueue(async () => {
			await mkdir(this.directory, { recursive: true });
			const handle = await open(this.file, 'a', 0o600);
			try {
				await handle.write(lines.map((line) => `${serialize(line)}\n`).join(''));
				await handle.sync();
			} finally {
				await handle.close();
			}
			this.owned.add(this.file);
		});
	}

	/** Everything kept is in the database: the files go. */
	forget(): Promise<void> {
		return this.enqueue(async () => {
			for (const file of this.owned) await unlink(file).catch(ignoreMissing);
			this.owned.clear();
		});
	}

	/** Claims the files other processes left (or this data dir's earlier run) and reads their lines. */
	async claim(): Promise<PendingUsage[]> {
		const names = (await readdir(this.directory).catch(ignoreMissing)) ?? [];
		const lines: PendingUsage[] = [];
		let claimed = 0;
		for (const name of names) {
			if (!name.startsWith(PREFIX) || !name.endsWith(SUFFIX) || join(this.directory, name) === this.file) continue;
			const target = join(this.directory, `${PREFIX}${this.id}-claimed-${claimed++}${SUFFIX}`);
			try {
				await rename(join(this.directory, name), target);
			} catch (error) {
				// Another replica starting at the same moment took it first.
				if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
				throw error;
			}
			this.owned.add(target);
			lines.push(...(await this.read(target, name)));
		}
		return lines;
	}

	private async read(file: string, name: string): Promise<PendingUsage[]> {
		const lines: PendingUsage[] = [];
		let number = 0;
		for await (const text of createInterface({ input: createReadStream(file), crlfDelay: Infinity })) {
			number++;
			if (text.trim() === '') continue;
			const line = parse(text);
			// A crash mid-append cuts the last line; the lines before it are whole (each was synced).
			if (line) lines.push(line);
			else this.log.error({ file: name, line: number }, 'usage: a damaged line in a kept file was skipped');
		}
		return lines;
	}

	private enqueue(work: () => Promise<void>): Promise<void> {
		const next = this.chain.then(work);
		this.chain = next.catch(() => undefined);
		return next;
	}
}

function serialize({ entry, recordedAt }: PendingUsage): string {
	return JSON.stringify({ ...entry, at: entry.at?.toISOString(), recordedAt: recordedAt.toISOString() });
}

function parse(text: string): PendingUsage | undefined {
	try {
		const { requestId, apiKeyId, model, images, seconds, costUsd, provider, at, recordedAt } = JSON.parse(text);
		const recorded = new Date(recordedAt);
		if (Number.isNaN(recorded.getTime())) return undefined;
		const entry: UsageEntry = { requestId, apiKeyId, model, images, costUsd, ...(seconds === undefined ? {} : { seconds }), ...(provider === undefined ? {} : { provider }), ...(at === undefined ? {} : { at: new Date(at) }) };
		return { entry, recordedAt: recorded };
	} catch {
		return undefined;
	}
}

function ignoreMissing(error: NodeJS.ErrnoException): undefined {
	if (error.code === 'ENOENT') return undefined;
	throw error;
}
