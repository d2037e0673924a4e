/**
 * How the service and the nodes write sizes and money, so every message and total reads the same:
 * sizes in binary units (the limits are configured in MiB), amounts in USD to a millionth.
 */

export function formatBytes(bytes: number): string {
	const mib = bytes / (1024 * 1024);
	return mib >= 1 ? `${Number.isInteger(mib) ? mib : mib.toFixed(1)} MiB` : `${bytes} bytes`;
}

/** Rounded so that 3 × 0.0035 reads 0.0105, not 0.010499999999999999. */
export function roundUsd(value: number): number {
	return Math.round(value * 1e6) / 1e6;
}

/**
 * Money is stored and added up in whole micro-dollars, by both database engines: sums of prices
 * such as 0.0035 stay exact, so a budget with room for k images admits exactly k, never k − 1
 * through a rounding error. A cost below a micro-dollar's precision is rounded to the nearest one.
 */
export function toMicros(usd: number): number {
	return Math.round(usd * 1_000_000);
}

export function fromMicros(micros: number | bigint | string): number {
	return Number(micros) / 1_000_000;
}
