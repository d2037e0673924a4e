// Writes docs/configuration.md from the service's option rows (server/src/config/options.ts), as
// built by `npm run build`. test/server/config/options.test.ts fails while the committed page is stale.
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { configurationMarkdown } = createRequire(import.meta.url)(join(root, 'server', 'dist', 'server', 'src', 'config'));
writeFileSync(join(root, 'docs', 'configuration.md'), configurationMarkdown());
