// Runs n8n's community-package scanner analysis (the check n8n applies to a published package) on
// an unpacked tarball folder and prints its verdict as JSON. A separate process because the
// scanner is an ES module and the jest suites are CommonJS.
import { analyzePackage } from '@n8n/scan-community-package/scanner/scanner.mjs';

const verdict = await analyzePackage(process.argv[2], ['**/*.js', 'package.json']);
process.stdout.write(JSON.stringify({ passed: verdict.passed, message: verdict.message ?? '', details: verdict.details ?? '' }));
