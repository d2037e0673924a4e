// Preloaded (`node --require`) into a service started as a child process: as the process exits, it
// writes every module file Node has loaded (require.cache) as JSON to the path in
// IMAGEGEN_TEST_LOADED_MODULES, so a suite sees what the service itself loaded over its life.
const { writeFileSync } = require('node:fs');

process.on('exit', () => {
	writeFileSync(process.env.IMAGEGEN_TEST_LOADED_MODULES, JSON.stringify(Object.keys(require.cache)));
});
