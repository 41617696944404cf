/**
 * The generated CRI messages and service definition, with the container-event reader and the
 * responses' reader (reader.ts; both use the same wire library), loaded together (lazily, by
 * `loadCriModules` in client.ts): the only heavy import of the CRI client. None imports grpc-js
 * (the generated module is made with `outputServices=generic-definitions`, `npm run proto:gen`).
 */
import * as proto from './generated/runtime_v1.js';
import { decodeContainerEventSummary } from './container-event.js';
import { BufferReader } from './reader.js';

export { proto, decodeContainerEventSummary, BufferReader };
