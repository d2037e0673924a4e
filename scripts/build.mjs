// Builds the n8n package (nodes, credentials, core → dist/, with their icons and codex files)
// and the imagegen-server workspace. Type errors fail the build.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
// Incremental: tsc keeps what it learnt about each project outside its dist/ (so the file is never
// packed), and a build after a one-file edit takes ≈ 2 s instead of ≈ 8 s for both projects.
const buildInfoDir = join(root, 'node_modules', '.cache', 'imagegen-build');
const run = (project, dist) => {
	const buildInfo = join(buildInfoDir, `${project.replaceAll(/[\\/]/g, '-')}.tsbuildinfo`);
	// Without its dist/, the build info would tell tsc that every output is already there.
	if (!existsSync(join(root, dist))) rmSync(buildInfo, { force: true });
	execFileSync(process.execPath, [tsc, '-p', project, '--incremental', '--tsBuildInfoFile', buildInfo], { cwd: root, stdio: 'inherit' });
	pruneOrphans(dist);
};

// An output whose source is gone must not linger in dist/ (and so in a tarball). Both projects'
// rootDir is the repository, so dist/<path>.js comes from <path>.ts.
const COMPILED = /(\.d\.ts\.map|\.d\.ts|\.js\.map|\.js)$/;
function pruneOrphans(dist) {
	for (const name of readdirSync(join(root, dist), { recursive: true }).map(String)) {
		if (!COMPILED.test(name)) continue;
		if (!existsSync(join(root, name.replace(COMPILED, '.ts')))) rmSync(join(root, dist, name), { force: true });
	}
}

run('tsconfig.json', 'dist');
const assets = ['icons', 'nodes', 'credentials'].filter((folder) => existsSync(join(root, folder))).flatMap((folder) =>
	readdirSync(join(root, folder), { recursive: true })
		.map((file) => join(folder, String(file)))
		.filter((file) => /\.(svg|png|json)$/.test(file)),
);
for (const asset of assets) {
	const target = join(root, 'dist', asset);
	mkdirSync(dirname(target), { recursive: true });
	cpSync(join(root, asset), target);
}
run(join('server', 'tsconfig.json'), join('server', 'dist'));
// The service's embedded database needs its native addon for this Node (install scripts are off).
createRequire(import.meta.url)('./sqlite-addon.cjs').ensureSqliteAddon();
// `npx imagegen-server` runs the committed server/bin/imagegen-server.js, which loads the built CLI.
