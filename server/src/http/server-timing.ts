/**
 * A `Server-Timing` header (W3C Server Timing): metrics as `name;dur=<milliseconds>`, separated by
 * commas, which browsers' developer tools and many HTTP clients show beside the request's own timing.
 */

export interface TimingMetric {
	/** A token: letters, digits and `-_.` only. */
	name: string;
	durationMs: number;
}

/** The header's value; durations to a tenth of a millisecond. */
export function serverTimingHeader(metrics: readonly TimingMetric[]): string {
	return metrics.map(({ name, durationMs }) => `${name};dur=${Math.max(0, durationMs).toFixed(1)}`).join(', ');
}
