/**
 * Inputs given as the URL of a file this same service hosts (an upload, an earlier generation)
 * are read from storage rather than fetched: on a local set-up that URL is a loopback address,
 * which the address check refuses to fetch, and a fetch would only come back here anyway.
 */
import { buffer } from 'node:stream/consumers';
import { invalidField } from '../../../core/errors';
import { formatBytes } from '../../../core/units';
import type { HostedFiles } from './hosted-files';

/** The bytes of our own file at `url`; undefined when the URL is not one of ours (then it is fetched). */
export type OwnFileReader = (url: URL, field: string, maxBytes: number) => Promise<Buffer | undefined>;

export function ownFileReader(files: HostedFiles): OwnFileReader {
	return async (url, field, maxBytes) => {
		const file = await files.fileAt(url);
		if (file === undefined) return undefined;
		const gone = () => invalidField(field, `'${field}' names a file of this service that is no longer there (expired or deleted)`, 'file_not_found');
		if (!file) throw gone();
		if (file.size > maxBytes) throw invalidField(field, `'${field}' is larger than the ${formatBytes(maxBytes)} allowed for an input`, 'too_large');
		const bytes = await files.openWhole(file);
		if (!bytes) throw gone();
		return await buffer(bytes);
	};
}
