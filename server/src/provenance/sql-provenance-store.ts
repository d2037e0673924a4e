/**
 * Provenance records (provenance-records.ts), on the data dir's SQLite database (shared by every
 * process on it) or on PostgreSQL (shared by every replica: an image marked by one is traced by
 * any). A record is one row, written once and never changed; a sweep deletes it once its keeping
 * has ended, and a read already passes it by from that moment.
 */
import type { SqlAdapter } from '../db/sql-adapter';
import { sweepRows } from '../db/sweep';
import { payloadHex, type NewProvenanceRecord, type ProvenanceRecord, type ProvenanceRecordStore, type ProvenanceStoreOptions } from './provenance-records';
import { insertValues, PROVENANCE_SQL, toRecord, type ProvenanceRow } from './provenance-rows';

export class SqlProvenanceStore implements ProvenanceRecordStore {
	constructor(
		private readonly adapter: SqlAdapter,
		private readonly options: ProvenanceStoreOptions,
	) {}

	/**
	 * Synced before it answers: the image is delivered next, and a record a power cut took would
	 * leave its mark naming nothing.
	 */
	async create(record: NewProvenanceRecord): Promise<boolean> {
		const { changes } = await this.adapter.write([{ sql: PROVENANCE_SQL.insert, values: insertValues(record, this.options) }]);
		return changes === 1;
	}

	async find(payload: Uint8Array, now?: Date): Promise<ProvenanceRecord | null> {
		const hex = payloadHex(payload);
		const row = await this.adapter.one<ProvenanceRow>(PROVENANCE_SQL.find, [hex, now ?? (await this.adapter.now())]);
		return row ? toRecord(row) : null;
	}

	async sweep(now?: Date): Promise<number> {
		return sweepRows(this.adapter, 'provenance_records', PROVENANCE_SQL.sweepable, [now ?? (await this.adapter.now())]);
	}
}
