// Preloaded (`node --require`) into a service under test: samples `process.memoryUsage()` every
// 5 ms and, when the process exits, writes the highest figures (bytes), the young generation's
// largest size (`newSpacePeak`) and its size then (`newSpaceAtExit`) to IMAGEGEN_TEST_MEMORY_REPORT.
'use strict';
const { writeFileSync } = require('node:fs');
const { getHeapSpaceStatistics } = require('node:v8');

const peaks = { newSpacePeak: 0 };
const newSpaceSize = () => getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_size ?? null;
const sample = () => {
	for (const [name, bytes] of Object.entries(process.memoryUsage())) peaks[name] = Math.max(peaks[name] ?? 0, bytes);
	peaks.newSpacePeak = Math.max(peaks.newSpacePeak, newSpaceSize() ?? 0);
};
setInterval(sample, 5).unref();
process.once('exit', () => {
	sample();
	writeFileSync(process.env.IMAGEGEN_TEST_MEMORY_REPORT, JSON.stringify({ ...peaks, newSpaceAtExit: newSpaceSize() }));
});
