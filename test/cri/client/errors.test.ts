import { describe, expect, it } from 'vitest';
import { CriError, GrpcStatus, isCriError, isDeadlineExceeded, isNotFound, isUnavailable, isUnimplemented, statusName, toCriError } from '../../../src/cri/client/errors.js';

describe('CriError', () => {
  it('carries method, code and details, and names the status in its message', () => {
    const err = new CriError('StopContainer', GrpcStatus.DEADLINE_EXCEEDED, 'context deadline exceeded');
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe('CriError');
    expect(err.method).toBe('StopContainer');
    expect(err.code).toBe(4);
    expect(err.codeName).toBe('DeadlineExceeded');
    expect(err.message).toBe('StopContainer: DeadlineExceeded: context deadline exceeded');
  });

  it('leaves the details out of the message when there are none', () => {
    expect(new CriError('Version', GrpcStatus.UNAVAILABLE, '').message).toBe('Version: Unavailable');
  });

  it('names every gRPC status and unknown codes', () => {
    expect(statusName(GrpcStatus.NOT_FOUND)).toBe('NotFound');
    expect(statusName(GrpcStatus.UNAUTHENTICATED)).toBe('Unauthenticated');
    expect(statusName(99)).toBe('Code99');
  });

  it('maps a grpc-js ServiceError shape (code + details) and keeps it as the cause', () => {
    const serviceError = Object.assign(new Error('14 UNAVAILABLE: No connection established'), {
      code: 14,
      details: 'No connection established',
    });
    const err = toCriError('ListPodSandbox', serviceError);
    expect(err.method).toBe('ListPodSandbox');
    expect(err.code).toBe(GrpcStatus.UNAVAILABLE);
    expect(err.details).toBe('No connection established');
    expect(err.cause).toBe(serviceError);
  });

  it('maps anything else to Unknown, and passes a CriError through unchanged', () => {
    const err = toCriError('ExecSync', new TypeError('boom'));
    expect(err.code).toBe(GrpcStatus.UNKNOWN);
    expect(err.details).toBe('boom');
    const same = new CriError('X', 5, 'gone');
    expect(toCriError('Y', same)).toBe(same);
  });

  it('helpers test the code of CriErrors only', () => {
    const nf = new CriError('ContainerStatus', GrpcStatus.NOT_FOUND, '');
    const un = new CriError('Version', GrpcStatus.UNAVAILABLE, '');
    const de = new CriError('StopContainer', GrpcStatus.DEADLINE_EXCEEDED, '');
    const ui = new CriError('GetContainerEvents', GrpcStatus.UNIMPLEMENTED, '');
    expect([isNotFound(nf), isNotFound(un)]).toEqual([true, false]);
    expect([isUnavailable(un), isUnavailable(de)]).toEqual([true, false]);
    expect([isDeadlineExceeded(de), isDeadlineExceeded(nf)]).toEqual([true, false]);
    expect([isUnimplemented(ui), isUnimplemented(un)]).toEqual([true, false]);
    // a plain object with the same code is not a CriError
    expect(isNotFound({ code: 5 })).toBe(false);
    expect(isCriError(nf)).toBe(true);
    expect(isCriError(new Error('x'))).toBe(false);
  });
});
