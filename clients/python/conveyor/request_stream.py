"""The request side of a Transcode call: the JobSpec, then the input, as a generator that
gRPC drains on its own thread. The response side steers it through a queue: a ReadRequest
restarts the input at an offset (seekable input), an output slot read is released, and
stop() ends the stream (after Summary, or when the call ends).

A seekable input (a regular file, a seekable file object, bytes) is sent as ContainerRange
runs and the stream stays open until Summary, since a ReadRequest may come until then (an
MP4 whose moov follows mdat is read that way, as conveyorctl reads a file). Any other input
is streamed front to back as container_chunk messages."""

import io
import os
import queue
import threading

from .v1 import transcoder_pb2 as pb

CHUNK = 1 << 20  # under gRPC's 4 MiB message limit
_STOP = ("stop",)


class Source:
    """A container input: `read(n)`, and `seek()` with a known size when it is seekable."""

    def __init__(self, input):
        self._owned = None
        if isinstance(input, (bytes, bytearray, memoryview)):
            self.file = io.BytesIO(bytes(input))
        elif isinstance(input, (str, os.PathLike)):
            self.file = self._owned = open(input, "rb")
        elif hasattr(input, "read"):
            self.file = input
        else:
            raise TypeError("input: a path, bytes or a binary file object, not %s" % type(input).__name__)
        self.seekable = False
        self.size = 0
        self._lock = threading.Lock()  # a call that ends and its retry may both read
        try:
            if self.file.seekable():
                self.size = self.file.seek(0, io.SEEK_END)
                self.file.seek(0)
                self.seekable = True
        except (AttributeError, OSError):
            pass

    def read_at(self, offset, n):
        with self._lock:
            self.file.seek(offset)
            return self.file.read(n)

    def close(self):
        if self._owned is not None:
            self._owned.close()


class RequestStream:
    """Iterate once (gRPC does). keep_open: after a streamed input, send EndOfInput instead of
    half-closing, so that output slots can still be released until stop()."""

    def __init__(self, spec, source, keep_open):
        self._spec = spec
        self._source = source
        self._keep_open = keep_open
        self._events = queue.Queue()

    def read_request(self, rr):
        self._events.put(("read", rr.seek_id, rr.offset))

    def release(self, slot):
        self._events.put(("release", slot))

    def stop(self):
        self._events.put(_STOP)

    def __iter__(self):
        yield pb.TranscodeRequest(spec=self._spec)
        if self._source.seekable:
            yield from self._ranges()
        else:
            yield from self._stream()

    def _ranges(self):
        seek_id, pos, sending = 0, 0, True
        size = self._source.size
        while True:
            try:
                event = self._events.get_nowait() if sending else self._events.get()
            except queue.Empty:
                event = None
            if event is _STOP:
                return
            if event is not None:
                if event[0] == "read":
                    seek_id, pos, sending = event[1], event[2], True
                else:
                    yield pb.TranscodeRequest(output_slot_released=pb.OutputSlotReleased(slot=event[1]))
                continue
            data = self._source.read_at(pos, CHUNK) if pos < size else b""
            end = pos + len(data) >= size or not data
            yield pb.TranscodeRequest(container_range=pb.ContainerRange(
                seek_id=seek_id, offset=pos, data=data, end_of_input=end))
            pos += len(data)
            sending = not end

    def _stream(self):
        while True:
            try:
                event = self._events.get_nowait()
            except queue.Empty:
                event = None
            if event is _STOP:
                return
            if event is not None:
                if event[0] == "release":
                    yield pb.TranscodeRequest(output_slot_released=pb.OutputSlotReleased(slot=event[1]))
                continue  # a ReadRequest for a streamed input: the daemon spools instead
            data = self._source.file.read(CHUNK)
            if not data:
                break
            yield pb.TranscodeRequest(container_chunk=data)
        if not self._keep_open:
            return
        yield pb.TranscodeRequest(end_of_input=pb.EndOfInput())
        while True:
            event = self._events.get()
            if event is _STOP:
                return
            if event[0] == "release":
                yield pb.TranscodeRequest(output_slot_released=pb.OutputSlotReleased(slot=event[1]))
