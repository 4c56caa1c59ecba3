"""Linting a batch of files in several processes: this one and `jobs - 1` forked workers.

The files are cut into small chunks. The workers take chunks from the front, this process takes
them from the back, until they meet: this process would otherwise sit idle. What the chunks
are is inherited by the fork, so nothing is sent to a worker; each sends back its reports,
pickled, through its own pipe, which this process reads between its own chunks.

Forking costs a few milliseconds and copies only the pages a worker writes to: everything
loaded before (the rules, the parser, the verl release's data) is shared. A `multiprocessing`
pool cost ≈ 25 ms more before the first worker started (importing it, a manager thread and a
queue feeder, which also took the GIL from this process's own linting).

A worker that dies (killed, out of memory) is noticed when its pipe ends: the chunks it had
taken and not sent are linted here. Ctrl-C reaches this process, which ends the workers.
Platforms without `fork` (Windows) lint in this process alone.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import struct
from typing import Callable, Sequence

_FRAME = struct.Struct("<I")  # the length of one message: a pickled (chunk index, reports)
_CLAIMS = struct.Struct("<ii")  # the shared counters: front (the workers' next chunk), back
_PIPE_SIZE = 1 << 20  # a worker's pipe holds its whole share (Linux): it never waits for us


def available() -> bool:
    return hasattr(os, "fork")


class _Claims:
    """Which chunks are still to take, in a small file the forked workers map too, locked with
    a POSIX record lock: the system releases it when its holder dies, so a worker killed while
    taking a chunk (out of memory) cannot leave the others waiting for ever."""

    def __init__(self, count: int) -> None:
        import fcntl
        import mmap

        self._fcntl = fcntl  # not at the top: there is no fcntl where there is no fork
        self._fd = _anonymous_file()
        os.ftruncate(self._fd, _CLAIMS.size)
        self._memory = mmap.mmap(self._fd, _CLAIMS.size)  # shared: forked children see writes
        _CLAIMS.pack_into(self._memory, 0, 0, count)

    def take(self, *, from_back: bool) -> int | None:
        """The index of the chunk taken, or None when all are taken."""
        self._fcntl.lockf(self._fd, self._fcntl.LOCK_EX)
        try:
            front, back = _CLAIMS.unpack_from(self._memory)
            if front >= back:
                return None
            if from_back:
                back -= 1
                taken = back
            else:
                taken = front
                front += 1
            _CLAIMS.pack_into(self._memory, 0, front, back)
            return taken
        finally:
            self._fcntl.lockf(self._fd, self._fcntl.LOCK_UN)

    def close(self) -> None:
        self._memory.close()
        os.close(self._fd)


def _anonymous_file() -> int:
    """A file descriptor of a file with no name (memory on Linux, a deleted temporary file
    elsewhere)."""
    if hasattr(os, "memfd_create"):
        return os.memfd_create("verl-lint-claims", os.MFD_CLOEXEC)
    import tempfile

    return os.dup(tempfile.TemporaryFile().fileno())


def lint_chunks(chunks: Sequence[list], jobs: int, lint_chunk: Callable[[list], list],
                done: Callable[[int, list], None],
                worker_end: Callable[[], None] | None = None) -> None:
    """`lint_chunk` every chunk in up to `jobs` processes, calling `done(index, reports)` for
    each chunk in order as the reports come in; each worker calls `worker_end()` once it has
    sent its last chunk."""
    claims = _Claims(len(chunks))
    workers: dict[int, int] = {}  # a worker's pipe (read end) -> its pid
    pids: list[int] = []  # every worker forked, reaped at the end
    try:
        for _ in range(min(jobs - 1, len(chunks) - 1)):
            pid, pipe = _fork(claims, chunks, lint_chunk, workers, worker_end)
            if pid is None:
                break  # no more processes: the ones forked and this one share the chunks
            pids.append(pid)
            workers[pipe] = pid
        finished: dict[int, list] = {}
        unread = {pipe: bytearray() for pipe in workers}
        out = 0  # the next chunk to report

        def report() -> None:
            nonlocal out
            while out in finished:
                done(out, finished.pop(out))
                out += 1

        while (index := claims.take(from_back=True)) is not None:
            finished[index] = lint_chunk(chunks[index])
            _receive(workers, unread, finished, wait=False)
            report()
        while workers:
            _receive(workers, unread, finished, wait=True)
            report()
        for index in range(out, len(chunks)):  # taken by a worker that died before sending
            if index not in finished:
                finished[index] = lint_chunk(chunks[index])
        report()
    finally:  # an interrupted run (Ctrl-C) ends the workers where they are
        for pipe, pid in workers.items():
            os.close(pipe)
            _kill(pid)
        for pid in pids:
            _reap(pid)
        claims.close()


def _fork(claims: _Claims, chunks: Sequence[list], lint_chunk: Callable[[list], list],
          workers: dict[int, int], worker_end: Callable[[], None] | None
          ) -> tuple[int | None, int]:
    read, write = os.pipe()
    try:
        pid = os.fork()
    except OSError:  # the process limit
        os.close(read)
        os.close(write)
        return None, -1
    if pid == 0:  # the worker: never returns
        os.close(read)
        for pipe in workers:  # its siblings' pipes: theirs to close
            os.close(pipe)
        _work(claims, chunks, lint_chunk, write, worker_end)
    os.close(write)
    _widen(read)
    os.set_blocking(read, False)
    return pid, read


def _work(claims: _Claims, chunks: Sequence[list], lint_chunk: Callable[[list], list],
          pipe: int, worker_end: Callable[[], None] | None) -> None:
    code = 1
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to answer
        while (index := claims.take(from_back=False)) is not None:
            message = pickle.dumps((index, lint_chunk(chunks[index])), pickle.HIGHEST_PROTOCOL)
            data = memoryview(_FRAME.pack(len(message)) + message)
            while data:
                data = data[os.write(pipe, data):]
        if worker_end is not None:
            worker_end()
        code = 0
    except BaseException:  # noqa: BLE001 - the parent lints what this worker did not send
        if os.environ.get("VERL_LINT_DEBUG", "") not in ("", "0"):
            import traceback

            traceback.print_exc()
    finally:
        # no interpreter teardown (freeing what the lint made), no flushing of the buffers
        # this process inherited: they are the parent's output
        os._exit(code)


def _widen(pipe: int) -> None:
    try:
        import fcntl

        fcntl.fcntl(pipe, fcntl.F_SETPIPE_SZ, _PIPE_SIZE)
    except (ImportError, AttributeError, OSError):  # not Linux, or above the system's limit
        pass


def _receive(workers: dict[int, int], unread: dict[int, bytearray], finished: dict[int, list],
             *, wait: bool) -> None:
    """Read what the workers sent (`wait`: until one of them sends or ends) into `finished`."""
    ready = select.select(list(workers), [], [])[0] if wait else list(workers)
    for pipe in ready:
        data = unread[pipe]
        while True:
            try:
                block = os.read(pipe, _PIPE_SIZE)
            except BlockingIOError:
                break
            if not block:  # the worker has ended
                os.close(pipe)
                del workers[pipe]
                break
            data += block
        start = 0
        while len(data) - start >= _FRAME.size:
            (size,) = _FRAME.unpack_from(data, start)
            end = start + _FRAME.size + size
            if end > len(data):
                break
            index, reports = pickle.loads(data[start + _FRAME.size:end])
            finished[index] = reports
            start = end
        del data[:start]


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:  # ended already
        pass


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
