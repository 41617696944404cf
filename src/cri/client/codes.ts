/**
 * CRI v1 enum values (the wire numbers), usable without loading the generated protobuf module
 * (which pulls in grpc-js). They must equal the proto enums in proto/runtime_v1.proto.
 */
export const ContainerStateCode = { CREATED: 0, RUNNING: 1, EXITED: 2, UNKNOWN: 3 } as const;
export const SandboxStateCode = { READY: 0, NOTREADY: 1 } as const;
export const ContainerEventCode = { CREATED: 0, STARTED: 1, STOPPED: 2, DELETED: 3 } as const;
export const NamespaceModeCode = { POD: 0, CONTAINER: 1, NODE: 2, TARGET: 3 } as const;
