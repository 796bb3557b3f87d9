"""Shared-memory JPEG output (JpegFramesOutput.shared_memory_slots) for a daemon on this
host: the attach on Started.shared_memory_output.attach_socket gives the daemon's memfd,
sealed against writes, which the client maps read-only and reads the JPEGs from."""

import mmap
import os
import socket

import grpc

from .errors import ConveyorError


class SharedJpegSlots:
    def __init__(self, shared_output):
        """Attaches as SharedMemoryOutput says: the key's bytes in one message; the answer
        "OK" carries the memfd as SCM_RIGHTS."""
        self.slot_bytes = shared_output.slot_bytes
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(10)
            try:
                s.connect(shared_output.attach_socket)
                s.sendall(shared_output.attach_key.encode())
                answer, fds, _, _ = socket.recv_fds(s, 256, 2)
            except OSError as e:
                raise ConveyorError(grpc.StatusCode.UNAVAILABLE,
                                    "shared-memory attach on %s: %s" % (shared_output.attach_socket, e))
        try:
            if not answer.startswith(b"OK") or len(fds) != 1:
                raise ConveyorError(grpc.StatusCode.FAILED_PRECONDITION,
                                    "shared-memory attach: the daemon answered %r with %d descriptors" %
                                    (answer.decode(errors="replace").strip(), len(fds)))
            self._map = mmap.mmap(fds[0], shared_output.slots * self.slot_bytes, mmap.MAP_SHARED, mmap.PROT_READ)
        finally:
            for fd in fds:
                os.close(fd)

    def read(self, shared_jpeg):
        start = shared_jpeg.slot * self.slot_bytes
        if shared_jpeg.size > self.slot_bytes or start + shared_jpeg.size > len(self._map):
            raise ConveyorError(grpc.StatusCode.INTERNAL, "a shared JPEG of %d bytes in slot %d is outside the memory" %
                                (shared_jpeg.size, shared_jpeg.slot))
        return bytes(self._map[start:start + shared_jpeg.size])

    def close(self):
        self._map.close()
