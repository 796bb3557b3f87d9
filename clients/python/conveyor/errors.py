"""The package's one exception: a Transcode call (or another RPC) that ended with a status
other than OK, or a local failure on the way (an attach refused), with the gRPC status."""

import grpc


class ConveyorError(Exception):
    """code: a grpc.StatusCode; details: the daemon's message (it names the field at fault
    for a bad JobSpec)."""

    def __init__(self, code, details):
        super().__init__("%s: %s" % (code.name, details))
        self.code = code
        self.details = details

    @classmethod
    def from_rpc_error(cls, e):
        code = e.code() if hasattr(e, "code") else grpc.StatusCode.UNKNOWN
        details = e.details() if hasattr(e, "details") else str(e)
        return cls(code or grpc.StatusCode.UNKNOWN, details or "")
