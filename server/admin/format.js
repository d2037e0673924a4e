// How the operator page writes money and days, the same in the key list and the chart.

/**
 * US dollars with four decimals everywhere: an image costs a fraction of a cent ($0.0035), and a
 * budget beside it in the same precision ($1.0000) reads as one scale, not two.
 */
export const usd = (value) => `$${Number(value).toFixed(4)}`;

/** The UTC day (YYYY-MM-DD) of an ISO timestamp. */
export const dayOf = (timestamp) => timestamp.slice(0, 10);

/** A Unix time in seconds as UTC to the second (YYYY-MM-DD HH:MM:SS), the same in every locale. */
export const utcSecondOf = (seconds) => new Date(seconds * 1000).toISOString().slice(0, 19).replace('T', ' ');
