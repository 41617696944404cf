/**
 * `podctl simulator`: parse and validate, serve the embedded CRI simulator in the foreground.
 */
import path from 'node:path';
import { Flags } from '@oclif/core';
import { PodctlCommand } from '../base/command.js';
import { UsageError } from '../lib/errors.js';
import { ExitCode, exitCodesHelp } from '../lib/exit-codes.js';
import { DEFAULT_SIMULATOR_PODS, parseFaults, serveSimulator, type SimulatorResult } from '../services/runtime/simulator.js';
import { faultListing } from '../cri/simulator/fault-spec.js';

export const SIMULATOR_SOCKET_NAME = 'simulator.sock';

export default class Simulator extends PodctlCommand {
  static override summary = 'Serve the embedded CRI simulator with a demo node, in the foreground.';
  static override description = `A real CRI v1 gRPC server on a unix socket, simulating pods and containers (SIGTERM behaviours, grace timing, preStop hooks), seeded with a demo node of --pods pods: static control-plane pods, critical and ordinary workloads across namespaces. For trying podctl without a container runtime; it never touches real containers.

Point other podctl commands at it with --runtime-endpoint unix://SOCKET; with the default socket (<state-dir>/${SIMULATOR_SOCKET_NAME}) podctl finds it by itself when no real runtime socket exists. Stop it with Ctrl-C (or SIGTERM); the socket is removed.

With --fault it misbehaves as a node does when pods get stuck (each cause \`podctl status --explain\` names can be produced); --list-faults prints the list.
${faultListing()}

${exitCodesHelp([ExitCode.Done, ExitCode.Failure, ExitCode.Usage])}`;

  static override examples = [
    { description: 'Serve 36 demo pods on the default socket:', command: '<%= config.bin %> <%= command.id %>' },
    {
      description: 'A network plugin that fails to tear down, and a postgres process stuck in I/O:',
      command: `<%= config.bin %> <%= command.id %> --fault 'StopPodSandbox=UNKNOWN:failed to destroy network for sandbox: plugin type="calico" failed (delete)' --fault container:postgres=stuck`,
    },
    {
      description: 'Serve 50 pods on a private socket, then look at them from another terminal:',
      command: '<%= config.bin %> <%= command.id %> --pods 50 --socket /tmp/podctl-sim.sock\n<%= config.bin %> status --runtime-endpoint unix:///tmp/podctl-sim.sock',
    },
  ];

  static override flags = {
    socket: Flags.string({ summary: `Unix socket to serve on (default <state-dir>/${SIMULATOR_SOCKET_NAME}).`, helpValue: 'PATH' }),
    pods: Flags.integer({ summary: 'Number of demo pods to seed.', default: DEFAULT_SIMULATOR_PODS, min: 0, max: 10_000 }),
    'time-scale': Flags.string({ summary: 'Speed of simulated waits: 1 = real time, 0.1 = ten times faster.', default: '1', helpValue: 'FACTOR' }),
    fault: Flags.string({ summary: 'Inject a fault (repeatable): METHOD=CODE[:MESSAGE], METHOD=hang, METHOD=delay:SECONDS, container:NAME=stuck|vanished.', multiple: true, helpValue: 'SPEC' }),
    'list-faults': Flags.boolean({ summary: 'Print the fault kinds --fault accepts, with examples, and exit.', default: false }),
  };

  protected override interruptMessage = 'stopping the simulator';
  protected override interruptIsNormal = true;

  async run(): Promise<SimulatorResult | { faults: string }> {
    const { flags } = await this.parse(Simulator);
    this.configure(flags);
    if (flags['list-faults']) {
      const listing = faultListing();
      if (!this.jsonEnabled()) this.log(listing);
      return { faults: listing };
    }
    const faults = parseFaults(flags.fault ?? []);
    const timeScale = Number(flags['time-scale']);
    if (!Number.isFinite(timeScale) || timeScale <= 0) {
      throw new UsageError(`--time-scale ${flags['time-scale']} is not a positive number`, 'e.g. --time-scale 0.1');
    }
    const socketPath = flags.socket ?? path.join(flags['state-dir'], SIMULATOR_SOCKET_NAME);
    const result = await serveSimulator({
      socketPath,
      pods: flags.pods,
      timeScale,
      faults,
      signal: this.abort.signal,
      onReady: (info) => {
        this.reporter.info(`podctl simulator: serving ${info.pods} pods on ${info.endpoint} (Ctrl-C to stop)`);
        for (const f of flags.fault ?? []) this.reporter.info(`podctl simulator: fault ${f}`);
      },
    });
    this.reporter.info(`podctl simulator: stopped after ${result.servedSeconds}s; ${socketPath} removed`);
    return result;
  }
}
