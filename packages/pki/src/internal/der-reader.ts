/**
 * A minimal DER reader: walks tag-length-value elements, enough to take the
 * subject name and the subject key identifier out of a certificate.
 */

/** One element: its tag, and where its whole encoding and its content lie in the input. */
export interface Element {
  readonly tag: number;
  /** Offset of the tag byte. */
  readonly start: number;
  /** Offset of the first content byte. */
  readonly contentStart: number;
  /** Offset just past the content. */
  readonly end: number;
}

/** Read the element at `offset`; throws RangeError on truncated or indefinite-length input. */
export function readElement(input: Buffer, offset: number, limit = input.length): Element {
  if (offset + 2 > limit) throw new RangeError(`DER: truncated element at ${offset}`);
  const tag = input[offset]!;
  if ((tag & 0x1f) === 0x1f) throw new RangeError(`DER: multi-byte tags are not supported (at ${offset})`);
  const first = input[offset + 1]!;
  let length: number;
  let contentStart: number;
  if (first < 0x80) {
    length = first;
    contentStart = offset + 2;
  } else {
    const count = first & 0x7f;
    if (count === 0 || count > 4) throw new RangeError(`DER: unsupported length form at ${offset}`);
    if (offset + 2 + count > limit) throw new RangeError(`DER: truncated length at ${offset}`);
    length = 0;
    for (let i = 0; i < count; i++) length = length * 256 + input[offset + 2 + i]!;
    contentStart = offset + 2 + count;
  }
  const end = contentStart + length;
  if (end > limit) throw new RangeError(`DER: element at ${offset} runs past its container`);
  return { tag, start: offset, contentStart, end };
}

/** The elements inside a constructed element, in order. */
export function children(input: Buffer, parent: Element): Element[] {
  const out: Element[] = [];
  for (let at = parent.contentStart; at < parent.end; ) {
    const child = readElement(input, at, parent.end);
    out.push(child);
    at = child.end;
  }
  return out;
}

/** The whole encoding (tag, length and content) of an element. */
export function encoding(input: Buffer, element: Element): Buffer {
  return input.subarray(element.start, element.end);
}

/** The content bytes of an element. */
export function content(input: Buffer, element: Element): Buffer {
  return input.subarray(element.contentStart, element.end);
}
