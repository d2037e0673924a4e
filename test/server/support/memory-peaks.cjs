// Preloaded (`node --require`) into a service under test: samples `process.memoryUsage()` every
// 5 ms and, when the process exits, writes the highest figures (bytes) and the young generation's
// size then (`newSpaceAtExit`) to IMAGEGEN_TEST_MEMORY_REPORT.
'use strict';
const { writeFileSync } = require('node:fs');
const { getHeapSpaceStatistics } = require('node:v8');

const peaks = {};
const sample = () => {
	for (const [name, bytes] of Object.entries(process.memoryUsage())) peaks[name] = Math.max(peaks[name] ?? 0, bytes);
};
setInterval(sample, 5).unref();
process.once('exit', () => {
	sample();
	const newSpace = getHeapSpaceStatistics().find((space) => space.space_name === 'new_space');
	writeFileSync(process.env.IMAGEGEN_TEST_MEMORY_REPORT, JSON.stringify({ ...peaks, newSpaceAtExit: newSpace ? newSpace.space_size : null }));
});
