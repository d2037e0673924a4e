// Before any suite: the embedded database's addon must load under the Node the suites run on. The
// build made it for the Node the build ran on; `npx jest` may run on another (npm's scripts and npx
// run node_modules/.bin/node, Node 22, when the shell's Node is older).
'use strict';
const path = require('node:path');

module.exports = async function ensureSqliteAddonForThisNode() {
	require(path.join(__dirname, '..', 'scripts', 'sqlite-addon.cjs')).ensureSqliteAddon();
};
