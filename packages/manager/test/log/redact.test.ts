/**
 * Line redaction on its own: by key at any depth (past the 64 levels the old
 * walk stopped at), by kind (Secrets, SecretLists, their last-applied
 * annotation, JSON strings that hold a Secret), fail-closed for what cannot
 * be checked (unparseable annotations, lines over the node budget or the
 * length limit), iterative over deep input, and untouched clean lines.
 */
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/index.js';
import { CENSOR, DEFAULT_REDACT_LIMITS, LAST_APPLIED, redactLine } from '../../src/log/redact.js';
import { LogCapture } from '../support.js';

const SECRET = 'hunter2-plain';
const SECRET_B64 = Buffer.from(SECRET).toString('base64');

const line = (record: Record<string, unknown>): string => `${JSON.stringify({ level: 30, time: '2026-01-01T00:00:00.000Z', ...record })}\n`;

const applied = (object: Record<string, unknown>): string => JSON.stringify(object);

const secretManifest = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', namespace: 'n' }, data: { k: SECRET_B64 }, stringData: { p: SECRET } };

function clean(text: string): void {
  expect(text).not.toContain(SECRET);
  expect(text).not.toContain(SECRET_B64);
}

describe('redactLine', () => {
  it('returns a clean line as it is, unparsed', () => {
    const l = line({ controller: 'harddisk', name: 'disk-1', msg: 'reconciling' });
    expect(redactLine(l)).toBe(l);
    // a last-applied annotation of something that is not a Secret is kept
    const cm = line({ annotations: { [LAST_APPLIED]: applied({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } }) } });
    expect(redactLine(cm)).toBe(cm);
  });

  it('keeps an int64 past 2^53 exact in a line it rewrites', () => {
    const out = redactLine('{"level":30,"obj":{"spec":{"bytes":9007199254740993},"token":"t0ps3cret"}}\n');
    expect(out).toContain('"bytes":9007199254740993');
    expect(out).not.toContain('t0ps3cret');
  });

  it('censors sensitive keys at any depth (the old walk stopped at 64 levels)', () => {
    let deep: Record<string, unknown> = { password: SECRET, data: { k: SECRET_B64 } };
    for (let i = 0; i < 200; i++) deep = { next: deep };
    const out = redactLine(line({ deep }));
    clean(out);
    expect(out).toContain(CENSOR);
    // through the logger too: pino writes 200 levels as they are
    const capture = new LogCapture();
    createLogger({ destination: capture }).info({ deep }, 'deep');
    clean(capture.text());
    expect(capture.lines()).toHaveLength(1);
  });

  it('censors a Secret by kind: its payload, its last-applied annotation whatever it holds, every item of a SecretList', () => {
    const secret = { ...secretManifest, metadata: { name: 's', annotations: { [LAST_APPLIED]: 'not even JSON', other: 'kept' } } };
    const out = JSON.parse(redactLine(line({ secret }))) as { secret: { data: unknown; stringData: unknown; metadata: { annotations: Record<string, unknown> } } };
    expect(out.secret).toMatchObject({ data: CENSOR, stringData: CENSOR, metadata: { name: 's', annotations: { [LAST_APPLIED]: CENSOR, other: 'kept' } } });
    // items of a SecretList carry no kind of their own
    const list = { apiVersion: 'v1', kind: 'SecretList', items: [{ metadata: { name: 'a', annotations: { [LAST_APPLIED]: `{"data":{"k":"${SECRET_B64}"}` } } }] };
    const listed = redactLine(line({ list }));
    clean(listed);
    expect(JSON.parse(listed)).toMatchObject({ list: { items: [{ metadata: { name: 'a', annotations: { [LAST_APPLIED]: CENSOR } } }] } });
  });

  it('censors a JSON string that holds a Secret, wherever it is, however deep its JSON', () => {
    // the annotation logged alone, and a request body as a string
    const alone = redactLine(line({ annotations: { [LAST_APPLIED]: applied(secretManifest) }, body: applied({ items: [secretManifest] }) }));
    clean(alone);
    expect(JSON.parse(alone)).toMatchObject({ annotations: { [LAST_APPLIED]: CENSOR }, body: CENSOR });
    // a Secret whose JSON nests 100 000 levels deep: parsed and walked without recursion
    const depth = 100_000;
    const deepJson = `{"apiVersion":"v1","kind":"Secret","stringData":{"p":"${SECRET}"},"x":${'['.repeat(depth)}${']'.repeat(depth)}}`;
    const out = redactLine(line({ annotations: { [LAST_APPLIED]: deepJson } }));
    clean(out);
    expect(JSON.parse(out)).toMatchObject({ annotations: { [LAST_APPLIED]: CENSOR } });
  });

  it('rewrites a JSON string that names a sensitive key, and censors one that cannot be parsed', () => {
    const out = redactLine(line({ request: { body: JSON.stringify({ user: 'admin', token: SECRET }) }, broken: `{"password": "${SECRET}"` }));
    clean(out);
    const parsed = JSON.parse(out) as { request: { body: string }; broken: string };
    expect(JSON.parse(parsed.request.body)).toEqual({ user: 'admin', token: CENSOR });
    expect(parsed.broken).toBe(CENSOR);
  });

  it('withholds a line it cannot check within its budget, keeping level and time', () => {
    const big = line({ items: Array.from({ length: 2_000 }, (_, i) => ({ i, password: SECRET })) });
    const out = redactLine(big, { ...DEFAULT_REDACT_LIMITS, maxNodes: 1_000 });
    clean(out);
    expect(JSON.parse(out)).toEqual({ level: 30, time: '2026-01-01T00:00:00.000Z', msg: 'log line withheld: too large to check for secrets', withheldLength: big.length });
    const long = redactLine(big, { ...DEFAULT_REDACT_LIMITS, maxLineLength: 1_000 });
    clean(long);
    expect(JSON.parse(long)).toMatchObject({ level: 30, msg: 'log line withheld: too large to check for secrets' });
    // within the default budget the same line is redacted and written
    const ok = redactLine(big);
    clean(ok);
    expect((JSON.parse(ok) as { items: unknown[] }).items).toHaveLength(2_000);
    // JSON strings nested past maxEmbeddedDepth are censored, not guessed at
    let nested = JSON.stringify({ token: SECRET });
    for (let i = 0; i < DEFAULT_REDACT_LIMITS.maxEmbeddedDepth + 2; i++) nested = JSON.stringify({ data: 1, inner: nested });
    clean(redactLine(line({ nested })));
  });

  it('withholds a suspect line that is not JSON rather than writing it', () => {
    const out = redactLine(`not json "password": "${SECRET}"\n`);
    clean(out);
    expect(JSON.parse(out)).toMatchObject({ msg: 'log line withheld: could not be checked for secrets' });
  });

  it('cuts bearer credentials out of every string', () => {
    const out = redactLine(line({ msg: `GET /api with Authorization: Bearer ${SECRET}`, headers: { 'x-forwarded': `bearer ${SECRET}` } }));
    clean(out);
    expect(out).toContain(`Bearer ${CENSOR}`);
  });
});
