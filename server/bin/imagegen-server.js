#!/usr/bin/env node
// The committed entry point of `imagegen-server`. npm links a bin when the package is installed;
// in a fresh checkout that happens before the build, so the link must point at a file that is
// already there. This file only hands over to the compiled CLI.
'use strict';
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const cli = join(__dirname, '..', 'dist', 'server', 'src', 'cli.js');
if (!existsSync(cli)) {
	process.stderr.write(`imagegen-server: the service is not built yet (${cli} is missing); run npm run build first\n`);
	process.exit(1);
}
require(cli);
