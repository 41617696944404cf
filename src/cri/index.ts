/**
 * The CRI layer's public surface. Loading it is cheap: grpc-js and the generated protobuf module
 * are imported only when a client connects or the simulator starts (`connectCri`,
 * `startSimulator`, which lives in ./simulator/index.js and is not re-exported here).
 */
export * from './client/errors.js';
export * from './client/codes.js';
export * from './client/endpoint.js';
export * from './client/kubelet-labels.js';
export { connectCri, type CriClient } from './client/client.js';
export * from './cache/pods.js';
