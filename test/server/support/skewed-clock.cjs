// Preloaded (`node --require`) into a replica whose clock must be off by IMAGEGEN_TEST_CLOCK_SKEW_MS
// milliseconds, as a machine whose clock drifted would be: `Date.now()` and `new Date()` both.
'use strict';
const skewMs = Number(process.env.IMAGEGEN_TEST_CLOCK_SKEW_MS || 0);
const RealDate = Date;
class SkewedDate extends RealDate {
	constructor(...args) {
		if (args.length === 0) super(RealDate.now() + skewMs);
		else super(...args);
	}
	static now() {
		return RealDate.now() + skewMs;
	}
}
globalThis.Date = SkewedDate;
