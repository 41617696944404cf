/**
 * The generated CRI messages and service definition, with the container-event reader, the
 * responses' reader (reader.ts; both use the same wire library) and the listings' one-pass decoders
 * (list-decode.ts, by CRI method name), loaded together (lazily, by
 * `loadCriModules` in client.ts): the only heavy import of the CRI client. None imports grpc-js
 * (the generated module is made with `outputServices=generic-definitions`, `npm run proto:gen`).
 */
import * as proto from './generated/runtime_v1.js';
import { decodeContainerEventSummary } from './container-event.js';
import { BufferReader } from './reader.js';
import { decodeListContainersResponse, decodeListPodSandboxResponse } from './list-decode.js';

/** The responses decoded in one pass (list-decode.ts) instead of by the generated decoder, by method name. */
const listDecoders: Readonly<Record<string, (bytes: Buffer) => unknown>> = { ListPodSandbox: decodeListPodSandboxResponse, ListContainers: decodeListContainersResponse };

export { proto, decodeContainerEventSummary, BufferReader, listDecoders };
