/**
 * Rows held under a lease: a row is one holder's until a time, which the holder moves on while it
 * works (a renewal); only the holder writes the row's outcome; a row whose lease ended, because its
 * holder stopped, goes to whoever claims it next. Durable jobs (the process running one) and
 * webhook deliveries (the attempt under way) are both held this way.
 *
 * The statements are the same text on both engines: holders and times are the caller's values, the
 * database makes none of them. Each argument below is a parameter (`$2`) or an expression.
 */
export interface LeasedTable {
	table: string;
	/** The column naming the holder (a process, a claim). */
	holder: string;
	/** The column saying when the lease ends. */
	until: string;
	/** What a row must be to be held at all (`status = 'running'`). */
	live: string;
}

export class Lease {
	constructor(private readonly leased: LeasedTable) {}

	/** The condition: a live row whose lease ended at `now`, free for the next claim. */
	ended(now: string): string {
		return `${this.leased.live} AND ${this.leased.until} <= ${now}`;
	}

	/** The condition: nobody holds the row at `now` (its lease ended, or it never had one). */
	unheld(now: string): string {
		return `(${this.leased.until} IS NULL OR ${this.leased.until} <= ${now})`;
	}

	/** The condition: row `id` is live and `holder`'s, which every outcome its holder writes is narrowed to. */
	heldBy(id: string, holder: string): string {
		return `id = ${id} AND ${this.leased.holder} = ${holder} AND ${this.leased.live}`;
	}

	/**
	 * Gives the rows among `candidates` (a SELECT of ids) whose lease ended at `now` to `holder`
	 * until `until`, answering `returning` of each. The end is checked again as each row is
	 * written, so a row another claim took meanwhile is passed by, never held twice.
	 */
	claim(claim: { candidates: string; holder: string; until: string; now: string; returning: string }): string {
		const { table, holder, until } = this.leased;
		return `UPDATE ${table} SET ${holder} = ${claim.holder}, ${until} = ${claim.until}
			WHERE id IN (${claim.candidates}) AND ${this.ended(claim.now)} RETURNING ${claim.returning}`;
	}

	/**
	 * Gives the live rows among `candidates` still held by `from` (a holder known to be gone, whatever
	 * its lease says) to `holder` until `until`, answering `returning` of each.
	 */
	takeFrom(take: { candidates: string; from: string; holder: string; until: string; returning: string }): string {
		const { table, holder, until, live } = this.leased;
		return `UPDATE ${table} SET ${holder} = ${take.holder}, ${until} = ${take.until}
			WHERE id IN (${take.candidates}) AND ${live} AND ${holder} = ${take.from} RETURNING ${take.returning}`;
	}

	/** Moves the lease of row `id` to `until`, if it is still `holder`'s. */
	renew(id: string, holder: string, until: string): string {
		return `UPDATE ${this.leased.table} SET ${this.leased.until} = ${until} WHERE ${this.heldBy(id, holder)}`;
	}
}
