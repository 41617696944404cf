/**
 * A minimal raw CRI client, the yardstick of `podctl kill`'s start-up (bench/startup.bench.ts): one
 * fresh process that sends StopContainer then StopPodSandbox to the runtime and exits — what a Go
 * tool such as crictl does, in Node.js: node:http2 over the unix socket, the two protobuf messages
 * encoded by hand, no gRPC library, no state, no checks.
 *
 *   node raw-cri-stop.mjs SOCKET CONTAINER_ID SANDBOX_ID TIMEOUT_SECONDS
 *
 * Exit 0 when both calls answered grpc-status 0; 1 otherwise, with the status on stderr.
 */
import http2 from 'node:http2';
import net from 'node:net';

const [socket, container, sandbox, timeout] = process.argv.slice(2);
if (!socket || !container || !sandbox || timeout === undefined) {
  console.error('usage: raw-cri-stop.mjs SOCKET CONTAINER_ID SANDBOX_ID TIMEOUT_SECONDS');
  process.exit(2);
}

const varint = (n) => {
  const bytes = [];
  while (n > 127) {
    bytes.push((n & 127) | 128);
    n = Math.floor(n / 128);
  }
  bytes.push(n);
  return Buffer.from(bytes);
};
/** A length-delimited protobuf field (wire type 2). */
const text = (field, value) => {
  const bytes = Buffer.from(value);
  return Buffer.concat([Buffer.from([(field << 3) | 2]), varint(bytes.length), bytes]);
};

const session = http2.connect('http://localhost', { createConnection: () => net.connect(socket) });

/** One unary call: the gRPC frame (uncompressed, 4-byte length), the status from the trailers. */
function call(method, message) {
  return new Promise((resolve, reject) => {
    const frame = Buffer.alloc(5);
    frame.writeUInt32BE(message.length, 1);
    const req = session.request({ ':method': 'POST', ':path': `/runtime.v1.RuntimeService/${method}`, 'content-type': 'application/grpc', te: 'trailers' });
    let status;
    let detail = '';
    const take = (headers) => {
      if (headers['grpc-status'] !== undefined) [status, detail] = [headers['grpc-status'], headers['grpc-message'] ?? ''];
    };
    req.on('response', take);
    req.on('trailers', take);
    req.on('data', () => undefined);
    req.on('end', () => (status === '0' ? resolve() : reject(new Error(`${method}: grpc-status ${status} ${decodeURIComponent(detail)}`))));
    req.on('error', reject);
    req.end(Buffer.concat([frame, message]));
  });
}

try {
  await call('StopContainer', Buffer.concat([text(1, container), Buffer.from([2 << 3]), varint(Number(timeout))]));
  await call('StopPodSandbox', text(1, sandbox));
} catch (error) {
  console.error(error.message);
  process.exitCode = 1;
} finally {
  session.close();
}
