// How the operator page writes money and days, the same in the key list and the chart.

/**
 * US dollars with four decimals everywhere: an image costs a fraction of a cent ($0.0035), and a
 * budget beside it in the same precision ($1.0000) reads as one scale, not two.
 */
export const usd = (value) => `$${Number(value).toFixed(4)}`;

/** The UTC day (YYYY-MM-DD) of an ISO timestamp. */
export const dayOf = (timestamp) => timestamp.slice(0, 10);
