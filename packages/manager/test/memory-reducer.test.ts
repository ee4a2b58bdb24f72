import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { holdMemoryReducer, memoryReducerHolders } from '../src/memory-reducer.js';

const dist = fileURLToPath(new URL('../dist/memory-reducer.js', import.meta.url));

/**
 * A process that allocates a burst (about 60 MB of objects, dropped), then
 * idles with a trickle of work (a timer every 200 ms, a few KB of garbage
 * each, as watch events and probes are), with V8 tracing its memory reducer
 * and its collections. Resolves with the trace once a memory-reducing
 * mark-compact has run or `windowMs` has passed.
 */
async function burstThenIdle(hold: boolean, windowMs: number): Promise<string> {
  const script = `
    ${hold ? `const { holdMemoryReducer } = await import(${JSON.stringify(dist)}); holdMemoryReducer();` : ''}
    let kept = [];
    for (let i = 0; i < 60; i++) {
      kept.push(Array.from({ length: 20000 }, (_, j) => ({ i, j, s: 'x'.repeat(16) + j })));
      if (kept.length > 8) kept.shift();
    }
    kept = [];
    console.log('burst done');
    setInterval(() => JSON.stringify(Array.from({ length: 50 }, (_, j) => ({ j }))), 200);
  `;
  const child = spawn(process.execPath, ['--max-semi-space-size=1', '--trace-memory-reducer', '--trace-gc', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let trace = '';
  try {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, windowMs);
      child.stdout.on('data', (d: Buffer) => {
        trace += d.toString();
        if (/burst done[\s\S]*Mark-Compact \(reduce\)/.test(trace)) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  } finally {
    child.kill('SIGKILL');
    if (child.exitCode === null && child.signalCode === null) await once(child, 'exit');
  }
  return trace.slice(trace.indexOf('burst done'));
}

describe('holdMemoryReducer', () => {
  it('lets V8 run a memory-reducing collection once the process goes quiet after a burst', async () => {
    // Both at once: the reducer ticks every 8 s, so each takes about 15-40 s.
    const [held, control] = await Promise.all([burstThenIdle(true, 75_000), burstThenIdle(false, 30_000)]);
    // Held: a tick sees a low allocation rate and the reducer starts its collection, which returns pages
    // (its only other start is the watchdog, 100 s after the last mark-compact: outside this window).
    expect(held).toMatch(/Memory reducer: low alloc[\s\S]*Memory reducer: started GC #1/);
    expect(held).toMatch(/Mark-Compact \(reduce\)/);
    // Not held, on Node 24+ (V8 13.1+): every tick reads the embedder heap's rate of 0 as high, so no
    // tick starts the reducer. Node 22's V8 floors the rate and passes: this half then says nothing.
    if (Number(process.versions.v8.split('.')[0]) >= 13) {
      expect(control).toMatch(/Memory reducer: high alloc/);
      expect(control).not.toMatch(/Memory reducer: low alloc/);
    }
  }, 120_000);

  it('is process-wide: the timer runs while anyone holds it and stops with the last release', () => {
    const before = memoryReducerHolders();
    const a = holdMemoryReducer();
    const b = holdMemoryReducer();
    expect(memoryReducerHolders()).toBe(before + 2);
    a();
    a();
    expect(memoryReducerHolders()).toBe(before + 1);
    b();
    expect(memoryReducerHolders()).toBe(before);
  });
});
