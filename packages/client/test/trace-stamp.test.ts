/**
 * The trace context a write records on an object (tracing.linkWrites) is read
 * back from the cluster: untrusted input. parseTraceparent accepts exactly the
 * W3C version-00 form and nothing else, of any type or length; the stamping
 * helpers never turn a patch that changes nothing into a write.
 */
import { describe, expect, it } from 'vitest';
import { parseTraceparent, stampObject, stampPatchBody, TRACEPARENT_ANNOTATION } from '../src/internal-api.js';

const GOOD = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

describe('parseTraceparent', () => {
  it('accepts a version-00 traceparent, sampled or not', () => {
    expect(parseTraceparent(GOOD)).toBe(GOOD);
    expect(parseTraceparent(GOOD.replace(/-01$/, '-00'))).toBe(GOOD.replace(/-01$/, '-00'));
  });

  it('ignores anything else: other types, lengths, versions, uppercase, all-zero IDs, separators, a huge string', () => {
    const bad: unknown[] = [
      undefined, null, 42, {}, [GOOD], '', 'garbage',
      `${GOOD}-extra`, GOOD.slice(0, -1), ` ${GOOD.slice(1)}`,
      GOOD.replace(/^00/, 'ff'), GOOD.replace(/^00/, '01'),
      GOOD.toUpperCase(),
      `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`,
      `00-4bf92f3577b34da6a3ce929d0e0e4736-${'0'.repeat(16)}-01`,
      GOOD.replaceAll('-', '_'),
      GOOD.replace('4bf9', '4bfg'),
      `${GOOD}\n`.slice(0, 55).replace(/1$/, '\n'),
      'x'.repeat(10_000_000),
    ];
    for (const value of bad) expect(parseTraceparent(value)).toBeUndefined();
  });
});

describe('stamping a write', () => {
  it('copies the object with the annotation added, leaving the caller\'s object and its other annotations alone', () => {
    const obj = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', annotations: { keep: 'me' } }, data: { x: '1' } };
    const out = stampObject(obj, GOOD);
    expect(out).toEqual({ ...obj, metadata: { name: 'a', annotations: { keep: 'me', [TRACEPARENT_ANNOTATION]: GOOD } } });
    expect(obj.metadata.annotations).toEqual({ keep: 'me' });
    expect(stampObject({ apiVersion: 'v1', kind: 'ConfigMap' }, GOOD)).toEqual({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { annotations: { [TRACEPARENT_ANNOTATION]: GOOD } } });
  });

  it('adds the annotation to a merge patch that changes something, and leaves alone one that changes nothing, removes all annotations or is not an object', () => {
    expect(JSON.parse(stampPatchBody('{"data":{"a":"1"}}', GOOD)!)).toEqual({ data: { a: '1' }, metadata: { annotations: { [TRACEPARENT_ANNOTATION]: GOOD } } });
    expect(JSON.parse(stampPatchBody('{"metadata":{"labels":{"a":"b"},"annotations":{"k":null}}}', GOOD)!)).toEqual({ metadata: { labels: { a: 'b' }, annotations: { k: null, [TRACEPARENT_ANNOTATION]: GOOD } } });
    expect(stampPatchBody('{}', GOOD)).toBeUndefined();
    expect(stampPatchBody('{"metadata":{"resourceVersion":"42"}}', GOOD)).toBeUndefined();
    expect(stampPatchBody('{"metadata":{"annotations":null},"data":{"a":"1"}}', GOOD)).toBeUndefined();
    expect(stampPatchBody('[{"op":"add","path":"/data/a","value":"1"}]', GOOD)).toBeUndefined();
    expect(stampPatchBody('not json', GOOD)).toBeUndefined();
  });
});
