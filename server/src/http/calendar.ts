/**
 * Dates that exist. `Date.parse` rolls impossible fields over (2030-02-31 becomes 2030-03-03,
 * T24:00 the next day), so a date is accepted only if its fields survive a round trip.
 */
const DATE_TIME_FIELDS = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2}))?)?/;

/** True when the leading YYYY-MM-DD (and hh:mm[:ss] if present) names a real day and time. */
export function isRealDateTime(text: string): boolean {
	const fields = DATE_TIME_FIELDS.exec(text);
	if (!fields) return false;
	const [year, month, day, hour = 0, minute = 0, second = 0] = fields.slice(1).map((field) => (field === undefined ? undefined : Number(field)));
	const date = new Date(Date.UTC(year!, month! - 1, day!));
	// Years 0–99 would be taken as 1900–1999 by Date.UTC: setUTCFullYear keeps the year as written.
	date.setUTCFullYear(year!);
	return date.getUTCMonth() === month! - 1 && date.getUTCDate() === day && hour < 24 && minute < 60 && second < 60;
}
