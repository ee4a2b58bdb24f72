/** Reading a request body with a size limit. */
import type { IncomingMessage } from 'node:http';

/** The body, `'too-large'` once it passes `limit` bytes (reading stops there), or a rejection if the client went away. */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer | 'too-large'> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (): void => {
      settled = true;
      req.off('data', onData);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) {
        settle();
        req.pause();
        resolve('too-large');
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => {
      if (settled) return;
      settle();
      resolve(Buffer.concat(chunks, size));
    });
    req.once('error', (err) => {
      if (settled) return;
      settle();
      reject(err);
    });
    req.once('close', () => {
      if (settled) return;
      settle();
      reject(new Error('the client closed the connection before sending the whole body'));
    });
  });
}
