/**
 * Reading a response body, shared by the informers and the ports' requests (rest.ts). A module of its own so
 * that the informers, which the in-memory tools reuse, do not load client-node through rest.ts.
 */
import type { IncomingMessage } from 'node:http';

/** The body of a response as text; with `keep` false it is drained and dropped (answers ''). */
export function readBody(res: IncomingMessage, keep = true): Promise<string> {
  return new Promise((resolve, reject) => {
    if (!keep) {
      res.on('end', () => resolve(''));
      res.on('error', reject);
      res.resume();
      return;
    }
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      text += chunk;
    });
    res.on('end', () => resolve(text));
    res.on('error', reject);
  });
}
