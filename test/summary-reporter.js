/**
 * Ends a run with one plain line, `summary: N passed, N failed, N skipped`, so any CI reading
 * logs sees the count without parsing jest's own format.
 */
class SummaryReporter {
	onRunComplete(_contexts, results) {
		const skipped = results.numPendingTests + results.numTodoTests;
		process.stdout.write(`\nsummary: ${results.numPassedTests} passed, ${results.numFailedTests} failed, ${skipped} skipped\n`);
	}
}
module.exports = SummaryReporter;
