/**
 * Runs podctl commands in-process against a fake session, capturing stdout, stderr and the exit code
 * exactly as `bin/run.js` would produce them (oclif's ExitError carries the code of an error).
 */
import { format } from 'node:util';
import { Config, Errors } from '@oclif/core';
import { vi } from 'vitest';
import { PodctlCommand } from '../../src/base/command.js';
import type { NodeSession, SessionOptions } from '../../src/domain/session-api.js';

interface HandOffCall {
  uids: string[];
  stateDir: string;
  runtimeEndpoint?: string;
  requestTimeoutMs?: number;
}

export interface CommandRun<T> {
  result: T | undefined;
  stdout: string;
  stderr: string;
  exitCode: number;
  sessionOptions: SessionOptions | undefined;
  handOffs: HandOffCall[];
}

let config: Config | undefined;

type Runnable<T> = { run(argv: string[], config: Config): Promise<T> };

export async function runCommand<T>(
  command: Runnable<T>,
  argv: string[],
  session?: NodeSession | ((options: SessionOptions) => Promise<NodeSession>),
  env: Record<string, string> = {},
): Promise<CommandRun<T>> {
  config ??= await Config.load({ root: process.cwd() });
  let stdout = '';
  let stderr = '';
  let sessionOptions: SessionOptions | undefined;
  const previousFactory = PodctlCommand.sessionFactory;
  const previousHandOff = PodctlCommand.handOff;
  const handOffs: HandOffCall[] = [];
  PodctlCommand.handOff = async (options) => {
    handOffs.push({
      uids: options.uids,
      stateDir: options.stateDir,
      ...(options.runtimeEndpoint ? { runtimeEndpoint: options.runtimeEndpoint } : {}),
      ...(options.requestTimeoutMs ? { requestTimeoutMs: options.requestTimeoutMs } : {}),
    });
    return { pid: 99999, log: `${options.stateDir}/hand-off-test.log` };
  };
  PodctlCommand.sessionFactory = async (options) => {
    sessionOptions = options;
    if (!session) throw new Error('this test gives no session');
    return typeof session === 'function' ? session(options) : session;
  };
  const out = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stdout += String(chunk);
    return true;
  });
  const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stderr += String(chunk);
    return true;
  });
  const log = vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => {
    stdout += `${format(...args)}\n`;
  });
  const error = vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => {
    stderr += `${format(...args)}\n`;
  });
  const savedEnv: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(env)) {
    savedEnv[k] = process.env[k];
    process.env[k] = v;
  }
  process.exitCode = undefined;
  let result: T | undefined;
  let exitCode = 0;
  try {
    result = await command.run(argv, config);
    exitCode = Number(process.exitCode ?? 0);
  } catch (error) {
    if (error instanceof Errors.ExitError) exitCode = error.oclif.exit ?? 1;
    else throw error;
  } finally {
    out.mockRestore();
    err.mockRestore();
    log.mockRestore();
    error.mockRestore();
    PodctlCommand.sessionFactory = previousFactory;
    PodctlCommand.handOff = previousHandOff;
    process.exitCode = undefined;
    for (const [k, v] of Object.entries(savedEnv)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
  return { result, stdout, stderr, exitCode, sessionOptions, handOffs };
}
