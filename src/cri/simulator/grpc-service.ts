/**
 * The simulator's grpc-js side: grpc-js itself and the RuntimeService as a grpc-js service
 * definition, made from the generated (transport-free) definition. Loaded lazily by server.ts:
 * only a process that serves the simulator loads grpc-js.
 *
 * Static namespace imports read grpc-js's CommonJS exports the same way under plain Node and in the
 * bundled build (a dynamic `import()` of a CommonJS package would expose only `default` there).
 */
import * as grpc from '@grpc/grpc-js';
import type { handleServerStreamingCall, handleUnaryCall, ServiceDefinition } from '@grpc/grpc-js';
import { RuntimeServiceDefinition, type MessageFns } from '../client/generated/runtime_v1.js';

type Methods = RuntimeServiceDefinition['methods'];
type RequestOf<M> = M extends { requestType: MessageFns<infer Req> } ? Req : never;
type ResponseOf<M> = M extends { responseType: MessageFns<infer Res> } ? Res : never;

/** A handler for each method of the RuntimeService, typed by its messages. */
export type RuntimeServiceServer = {
  -readonly [K in keyof Methods]: Methods[K]['responseStream'] extends true
    ? handleServerStreamingCall<RequestOf<Methods[K]>, ResponseOf<Methods[K]>>
    : handleUnaryCall<RequestOf<Methods[K]>, ResponseOf<Methods[K]>>;
};

/** The RuntimeService as grpc-js serves it: each method's path and its messages' encode/decode. */
function runtimeServiceDefinition(): ServiceDefinition {
  const entries = Object.entries(RuntimeServiceDefinition.methods).map(([key, method]) => {
    const request = method.requestType as MessageFns<unknown>;
    const response = method.responseType as MessageFns<unknown>;
    const definition = {
      path: `/${RuntimeServiceDefinition.fullName}/${method.name}`,
      requestStream: method.requestStream,
      responseStream: method.responseStream,
      requestSerialize: (value: unknown) => Buffer.from(request.encode(value).finish()),
      requestDeserialize: (bytes: Buffer) => request.decode(bytes),
      responseSerialize: (value: unknown) => Buffer.from(response.encode(value).finish()),
      responseDeserialize: (bytes: Buffer) => response.decode(bytes),
    };
    return [key, definition] as const;
  });
  return Object.fromEntries(entries);
}

const runtimeService = runtimeServiceDefinition();

export { grpc, runtimeService };
