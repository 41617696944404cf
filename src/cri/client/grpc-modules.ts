/**
 * grpc-js and the generated CRI module (with the container-event reader, which uses the same wire
 * library), loaded together (lazily, by `loadGrpcModules` in client.ts): the only heavy imports of
 * the CRI layer.
 *
 * Static namespace imports read grpc-js's CommonJS exports the same way under plain Node and in the
 * bundled build (a dynamic `import()` of a CommonJS package would expose only `default` there).
 */
import * as grpc from '@grpc/grpc-js';
import * as proto from './generated/runtime_v1.js';
import { decodeContainerEventSummary } from './container-event.js';

export { grpc, proto, decodeContainerEventSummary };
