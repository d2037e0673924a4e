/**
 * Runs `worker` over `inputs` with at most `limit` in flight and answers results in input order.
 * On the first failure no new work starts; the failure with the lowest index is thrown once the
 * work already in flight has settled, so no request is left running behind the node's back.
 */
export async function mapInOrder<T, R>(
	inputs: readonly T[],
	limit: number,
	worker: (input: T, index: number) => Promise<R>,
): Promise<R[]> {
	const results: R[] = new Array<R>(inputs.length);
	const failures = new Map<number, unknown>();
	let next = 0;

	const lane = async (): Promise<void> => {
		while (next < inputs.length && failures.size === 0) {
			const index = next++;
			try {
				results[index] = await worker(inputs[index] as T, index);
			} catch (error) {
				failures.set(index, error);
			}
		}
	};

	const lanes = Math.max(1, Math.min(Math.floor(limit) || 1, inputs.length));
	await Promise.all(Array.from({ length: lanes }, lane));
	if (failures.size > 0) throw failures.get(Math.min(...failures.keys()));
	return results;
}
