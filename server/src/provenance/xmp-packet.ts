/**
 * The XMP packet written into every generated image: the IPTC digital source type, the tool that
 * made it, the model and the time; the prompt only when the operator allows it (it may be private).
 * A converted upload gets the facts its original had that survive a conversion.
 */
interface XmpFacts {
	digitalSourceType?: string;
	creatorTool?: string;
	model?: string;
	createdAt?: Date;
	prompt?: string;
	/** Kept from the original through a conversion (EXIF/XMP creator and copyright). */
	creator?: string;
	copyright?: string;
}

/** An APP1 segment holds at most 65,533 bytes; a prompt is cut so the packet always fits one. */
const MAX_PROMPT_CHARACTERS = 8_000;

export function xmpPacket(facts: XmpFacts): string {
	const attributes: [string, string | undefined][] = [
		['Iptc4xmpExt:DigitalSourceType', facts.digitalSourceType],
		['xmp:CreatorTool', facts.creatorTool],
		['xmp:CreateDate', facts.createdAt?.toISOString()],
		['Iptc4xmpExt:AISystemUsed', facts.model],
		['Iptc4xmpExt:AIPromptInformation', facts.prompt?.slice(0, MAX_PROMPT_CHARACTERS)],
	];
	const properties = attributes
		.filter((entry): entry is [string, string] => entry[1] !== undefined)
		.map(([name, value]) => `\n   ${name}="${escapeXml(value)}"`)
		.join('');
	const creator = facts.creator === undefined ? '' : `\n   <dc:creator><rdf:Seq><rdf:li>${escapeXml(facts.creator)}</rdf:li></rdf:Seq></dc:creator>`;
	const rights =
		facts.copyright === undefined ? '' : `\n   <dc:rights><rdf:Alt><rdf:li xml:lang="x-default">${escapeXml(facts.copyright)}</rdf:li></rdf:Alt></dc:rights>`;
	return [
		'<?xpacket begin="\uFEFF" id="W5M0MpCehiHzreSzNTczkc9d"?>',
		'<x:xmpmeta xmlns:x="adobe:ns:meta/">',
		' <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">',
		`  <rdf:Description rdf:about=""
   xmlns:xmp="http://ns.adobe.com/xap/1.0/"
   xmlns:dc="http://purl.org/dc/elements/1.1/"
   xmlns:Iptc4xmpExt="http://iptc.org/std/Iptc4xmpExt/2008-02-29/"${properties}>${creator}${rights}
  </rdf:Description>`,
		' </rdf:RDF>',
		'</x:xmpmeta>',
		'<?xpacket end="w"?>',
	].join('\n');
}

function escapeXml(text: string): string {
	// Characters XML 1.0 cannot carry at all are dropped; the rest are escaped.
	return text
		.replace(/[^\x09\x0a\x0d\x20-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]/gu, '')
		.replace(/&/g, '&amp;')
		.replace(/</g, '&lt;')
		.replace(/>/g, '&gt;')
		.replace(/"/g, '&quot;');
}
