/**
 * One pooled connection held for several statements (a transaction, a session lock). A connection
 * that failed goes back to the pool only if it is known clean; otherwise it is closed, which also
 * makes the server roll back and drop its locks.
 */
import type { Pool, PoolClient } from 'pg';

export async function withConnection<T>(pool: Pool, work: (client: PoolClient) => Promise<T>, options: { transaction?: boolean } = {}): Promise<T> {
	const client = await pool.connect();
	let lost = false;
	// A connection that dies while checked out reports it as an event, which, unheard, would end
	// the process; the statement that follows fails with the reason anyway.
	const onError = () => {
		lost = true;
	};
	client.on('error', onError);
	let reusable = true;
	try {
		if (options.transaction) await client.query('BEGIN');
		const result = await work(client);
		if (options.transaction) await client.query('COMMIT');
		return result;
	} catch (error) {
		reusable =
			options.transaction === true &&
			!lost &&
			(await client.query('ROLLBACK').then(
				() => true,
				() => false,
			));
		throw error;
	} finally {
		client.off('error', onError);
		client.release(!reusable || lost);
	}
}
