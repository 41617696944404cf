/**
 * The CRI layer's public surface. Loading it is cheap: grpc-js and the generated protobuf module
 * are imported only when a client connects or the simulator starts (`connectCri`,
 * `startSimulator`, which lives in ./simulator/index.js and is not re-exported here).
 */
export * from './errors.js';
export * from './codes.js';
export * from './endpoint.js';
export * from './kubelet-labels.js';
export { connectCri, type CriClient } from './client.js';
export * from './pods.js';
