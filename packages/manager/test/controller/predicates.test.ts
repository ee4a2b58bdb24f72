/**
 * Predicates decide which informer events reach the workqueue. Pure: events
 * are built by hand, as an informer would deliver them.
 */
import { describe, expect, it } from 'vitest';
import type { InformerEvent } from '@kubeloop/cache';
import type { KubeObject, ObjectMeta } from '@kubeloop/scheme';
import {
  and,
  annotationsChanged,
  generationChanged,
  isManagerError,
  labelSelectorPredicate,
  labelsChanged,
  not,
  or,
  resourceVersionChanged,
} from '../../src/index.js';
import type { Predicate } from '../../src/index.js';

function obj(metadata: ObjectMeta): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: 'ns', ...metadata } };
}
const add = (metadata: ObjectMeta = {}): InformerEvent<KubeObject> => ({ type: 'add', object: obj(metadata) });
const del = (metadata: ObjectMeta = {}): InformerEvent<KubeObject> => ({ type: 'delete', object: obj(metadata), finalStateUnknown: false });
const update = (old: ObjectMeta, now: ObjectMeta): InformerEvent<KubeObject> => ({ type: 'update', old: obj(old), object: obj(now) });

describe('update-only predicates let adds and deletes through', () => {
  const all: [string, Predicate][] = [
    ['generationChanged', generationChanged()],
    ['resourceVersionChanged', resourceVersionChanged()],
    ['labelsChanged', labelsChanged()],
    ['annotationsChanged', annotationsChanged()],
  ];
  it.each(all)('%s', (_, p) => {
    expect(p(add())).toBe(true);
    expect(p(del())).toBe(true);
  });
});

describe('generationChanged', () => {
  const p = generationChanged();
  it('drops a status-only update (same generation, new resourceVersion)', () => {
    expect(p(update({ generation: 3, resourceVersion: '10' }, { generation: 3, resourceVersion: '11' }))).toBe(false);
  });
  it('passes a spec change (generation bumped)', () => {
    expect(p(update({ generation: 3 }, { generation: 4 }))).toBe(true);
  });
});

describe('resourceVersionChanged', () => {
  const p = resourceVersionChanged();
  it('drops a resync that delivers the same resourceVersion', () => {
    expect(p(update({ resourceVersion: '7' }, { resourceVersion: '7' }))).toBe(false);
  });
  it('passes a real write', () => {
    expect(p(update({ resourceVersion: '7' }, { resourceVersion: '8' }))).toBe(true);
  });
});

describe('labelsChanged', () => {
  const p = labelsChanged();
  it('drops an update whose labels are the same map in another key order', () => {
    expect(p(update({ labels: { a: '1', b: '2' } }, { labels: { b: '2', a: '1' } }))).toBe(false);
  });
  it('treats no labels and an empty map as the same', () => {
    expect(p(update({}, { labels: {} }))).toBe(false);
  });
  it('passes an added, removed or changed label', () => {
    expect(p(update({ labels: { a: '1' } }, { labels: { a: '1', b: '2' } }))).toBe(true);
    expect(p(update({ labels: { a: '1', b: '2' } }, { labels: { a: '1' } }))).toBe(true);
    expect(p(update({ labels: { a: '1' } }, { labels: { a: '2' } }))).toBe(true);
  });
  it('ignores annotation changes', () => {
    expect(p(update({ labels: { a: '1' }, annotations: { x: '1' } }, { labels: { a: '1' }, annotations: { x: '2' } }))).toBe(false);
  });
});

describe('annotationsChanged', () => {
  const p = annotationsChanged();
  it('drops an update whose annotations are only reordered', () => {
    expect(p(update({ annotations: { z: '1', y: '2', x: '3' } }, { annotations: { x: '3', y: '2', z: '1' } }))).toBe(false);
  });
  it('passes a changed annotation and ignores label changes', () => {
    expect(p(update({ annotations: { x: '1' } }, { annotations: { x: '2' } }))).toBe(true);
    expect(p(update({ labels: { a: '1' } }, { labels: { a: '2' } }))).toBe(false);
  });
});

describe('labelSelectorPredicate', () => {
  it('matches exact labels given as a map, on every event type', () => {
    const p = labelSelectorPredicate({ app: 'web', tier: 'db' });
    expect(p(add({ labels: { app: 'web', tier: 'db', extra: 'x' } }))).toBe(true);
    expect(p(add({ labels: { app: 'web' } }))).toBe(false);
    expect(p(add({}))).toBe(false);
    expect(p(del({ labels: { app: 'web', tier: 'db' } }))).toBe(true);
  });
  it('decides an update on the new object', () => {
    const p = labelSelectorPredicate({ app: 'web' });
    expect(p(update({ labels: { app: 'other' } }, { labels: { app: 'web' } }))).toBe(true);
    expect(p(update({ labels: { app: 'web' } }, { labels: { app: 'other' } }))).toBe(false);
  });
  it('parses equality terms of a selector string, spaces allowed', () => {
    const p = labelSelectorPredicate('app=web, tier==db');
    expect(p(add({ labels: { app: 'web', tier: 'db' } }))).toBe(true);
    expect(p(add({ labels: { app: 'web', tier: 'cache' } }))).toBe(false);
  });
  it('honours != , existence and set-based terms (the syntax the Selector type advertises)', () => {
    const p = labelSelectorPredicate('app=web,tier!=db');
    expect(p(add({ labels: { app: 'web', tier: 'cache' } }))).toBe(true);
    expect(p(add({ labels: { app: 'web' } }))).toBe(true);
    expect(p(add({ labels: { app: 'web', tier: 'db' } }))).toBe(false);

    const exists = labelSelectorPredicate('canary');
    expect(exists(add({ labels: { canary: 'yes' } }))).toBe(true);
    expect(exists(add({ labels: {} }))).toBe(false);
    const absent = labelSelectorPredicate('!canary');
    expect(absent(add({ labels: { canary: 'yes' } }))).toBe(false);
    expect(absent(add({}))).toBe(true);

    const inSet = labelSelectorPredicate('env in (prod, staging),zone notin (z1)');
    expect(inSet(add({ labels: { env: 'prod', zone: 'z2' } }))).toBe(true);
    expect(inSet(add({ labels: { env: 'staging' } }))).toBe(true);
    expect(inSet(add({ labels: { env: 'dev' } }))).toBe(false);
    expect(inSet(add({ labels: { env: 'prod', zone: 'z1' } }))).toBe(false);
  });
  it('an empty selector matches everything', () => {
    expect(labelSelectorPredicate('')(add({}))).toBe(true);
    expect(labelSelectorPredicate({})(add({ labels: { a: 'b' } }))).toBe(true);
  });
  it('rejects a selector it cannot parse instead of silently matching nothing', () => {
    let caught: unknown;
    try {
      labelSelectorPredicate('app=(web');
    } catch (err) {
      caught = err;
    }
    expect(isManagerError(caught) && caught.reason).toBe('InvalidOptions');
  });
});

describe('and / or / not', () => {
  const yes: Predicate = () => true;
  const no: Predicate = () => false;
  const e = add();
  it('and needs every predicate; and() of nothing passes', () => {
    expect(and(yes, yes)(e)).toBe(true);
    expect(and(yes, no)(e)).toBe(false);
    expect(and()(e)).toBe(true);
  });
  it('or needs one; or() of nothing fails', () => {
    expect(or(no, yes)(e)).toBe(true);
    expect(or(no, no)(e)).toBe(false);
    expect(or()(e)).toBe(false);
  });
  it('not inverts', () => {
    expect(not(yes)(e)).toBe(false);
    expect(not(no)(e)).toBe(true);
  });
  it('compose real predicates: a spec change or a label change, on web objects only', () => {
    const p = and(labelSelectorPredicate({ app: 'web' }), or(generationChanged(), labelsChanged()));
    expect(p(update({ generation: 1, labels: { app: 'web' } }, { generation: 2, labels: { app: 'web' } }))).toBe(true);
    expect(p(update({ generation: 1, labels: { app: 'web' } }, { generation: 1, labels: { app: 'web', v: '2' } }))).toBe(true);
    expect(p(update({ generation: 1, labels: { app: 'web' } }, { generation: 1, labels: { app: 'web' } }))).toBe(false);
    expect(p(update({ generation: 1, labels: { app: 'db' } }, { generation: 2, labels: { app: 'db' } }))).toBe(false);
    expect(not(generationChanged())(update({ generation: 1 }, { generation: 1 }))).toBe(true);
  });
});
