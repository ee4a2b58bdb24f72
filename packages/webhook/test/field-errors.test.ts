import { describe, expect, it } from 'vitest';
import { fieldError, fieldPath, formatFieldError, formatFieldErrorBody } from '../src/index.js';

describe('field paths', () => {
  it('join names with dots, indexes and keys in brackets', () => {
    expect(fieldPath('spec', 'containers', 0, 'image')).toBe('spec.containers[0].image');
    expect(fieldPath('metadata', 'labels', { key: 'app.kubernetes.io/name' })).toBe('metadata.labels[app.kubernetes.io/name]');
    expect(fieldPath('spec')).toBe('spec');
    expect(fieldPath()).toBe('');
  });
});

describe('field errors', () => {
  it('read as apimachinery writes them', () => {
    expect(formatFieldError(fieldError.invalid('spec.size', -1, 'must be positive'))).toBe('spec.size: Invalid value: -1: must be positive');
    expect(formatFieldError(fieldError.invalid('spec.name', 'Bad Name', 'must be lower case'))).toBe('spec.name: Invalid value: "Bad Name": must be lower case');
    expect(formatFieldError(fieldError.invalid('spec.on', true))).toBe('spec.on: Invalid value: true');
    expect(formatFieldError(fieldError.invalid('spec.x', null, 'must be set'))).toBe('spec.x: Invalid value: null: must be set');
    expect(formatFieldError(fieldError.invalid('spec.sel', { a: 1 }, 'bad'))).toBe('spec.sel: Invalid value: {"a":1}: bad');
    expect(formatFieldError(fieldError.required('spec.size'))).toBe('spec.size: Required value');
    expect(formatFieldError(fieldError.required('spec.size', 'the disk needs a size'))).toBe('spec.size: Required value: the disk needs a size');
    expect(formatFieldError(fieldError.forbidden('spec.node', 'may not change'))).toBe('spec.node: Forbidden: may not change');
    expect(formatFieldError(fieldError.notSupported('spec.media', 'tape', ['ssd', 'hdd']))).toBe('spec.media: Unsupported value: "tape": supported values: "ssd", "hdd"');
    expect(formatFieldError(fieldError.notSupported('spec.media', 'tape'))).toBe('spec.media: Unsupported value: "tape"');
    expect(formatFieldError(fieldError.duplicate('spec.ports[1].name', 'http'))).toBe('spec.ports[1].name: Duplicate value: "http"');
    expect(formatFieldError(fieldError.tooLong('metadata.name', 63))).toBe('metadata.name: Too long: may not be more than 63 bytes');
    expect(formatFieldError(fieldError.tooMany('spec.disks', 9, 8))).toBe('spec.disks: Too many: 9: must have at most 8 items');
  });

  it('carry the cause reason, field and body the Status needs', () => {
    const e = fieldError.invalid('spec.size', -1, 'must be positive');
    expect(e).toEqual({ type: 'FieldValueInvalid', field: 'spec.size', badValue: -1, detail: 'must be positive' });
    expect(formatFieldErrorBody(e)).toBe('Invalid value: -1: must be positive');
    expect(Object.isFrozen(e)).toBe(true);
  });

  it('show values that JSON cannot hold without throwing', () => {
    const circular: Record<string, unknown> = {};
    circular['self'] = circular;
    expect(formatFieldErrorBody(fieldError.invalid('x', circular))).toBe('Invalid value: [object Object]');
    expect(formatFieldErrorBody(fieldError.invalid('x', 10n))).toBe('Invalid value: 10');
    expect(formatFieldErrorBody(fieldError.invalid('x', () => 1))).toBe('Invalid value: function');
  });
});
