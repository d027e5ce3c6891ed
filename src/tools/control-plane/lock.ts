/**
 * A cross-process exclusive lock, so that two concurrent first-time builds (say a developer's shell and a
 * test run) never compile into the same cache directory at once; the second one waits and then finds the
 * binaries already there.
 *
 * The lock is a kernel flock(2) held by a small `flock` child process rather than a pid file: the kernel
 * drops it as soon as that child exits, and the child exits as soon as our end of its stdin closes. So a
 * crashed or killed holder can never leave a stale lock behind.
 */
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Log } from './log.ts';

export interface HeldLock {
  release(): Promise<void>;
}

export async function acquireLock(path: string, what: string, log: Log): Promise<HeldLock> {
  mkdirSync(dirname(path), { recursive: true });
  // `flock FILE sh -c …` opens and locks FILE, then runs the shell, which reports success and then waits
  // for EOF on stdin. The lock lives exactly as long as that shell.
  const child = spawn('flock', ['--exclusive', path, 'sh', '-c', 'echo locked; cat >/dev/null'], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });

  const started = Date.now();
  const waitingNotice = setInterval(() => {
    const seconds = Math.round((Date.now() - started) / 1000);
    log(`waiting for ${what}: another process holds ${path} (${seconds}s)…`);
  }, 15_000);

  try {
    await new Promise<void>((resolve, reject) => {
      child.stdout.once('data', () => resolve());
      child.once('error', (error: NodeJS.ErrnoException) => {
        reject(
          error.code === 'ENOENT'
            ? new Error('the `flock` command (util-linux) is required to serialise control-plane builds')
            : error,
        );
      });
      child.once('exit', (code) => reject(new Error(`flock exited with ${code} before locking ${path}: ${stderr}`)));
    });
  } finally {
    clearInterval(waitingNotice);
  }

  let released = false;
  return {
    release: async () => {
      if (released) return;
      released = true;
      const exited = new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) resolve();
        else child.once('exit', () => resolve());
      });
      child.stdin.end();
      await exited;
    },
  };
}
