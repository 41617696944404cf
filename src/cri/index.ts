/**
 * The CRI layer's public surface. Loading it is cheap: the generated protobuf module is imported
 * only when a client connects or the simulator starts (`connectCri`, `startSimulator`, which lives
 * in ./simulator/index.js and is not re-exported here), and grpc-js only by the simulator.
 */
export * from './client/errors.js';
export * from './client/codes.js';
export * from './client/endpoint.js';
export * from './client/kubelet-labels.js';
export { connectCri, type CriClient } from './client/client.js';
export * from './cache/pods.js';
