"""conveyor: the Python client of conveyord, the GPU video transcode daemon.

    import conveyor
    for pts, jpeg in conveyor.frames("in.mp4", fps=1, size=(640, 0), start=60):
        ...
    conveyor.transcode("in.mp4", "out.mkv", size=(1280, 0))

The daemon is found as conveyorctl finds it ($CONVEYOR_TARGET, else the system socket
/run/conveyor/conveyord.sock, else the user's); pass target= or use a Client to choose.
Failures raise ConveyorError, whose .code is the call's grpc.StatusCode.
"""

from .client import Client, Frames, Result, default_target, job_spec, to_rational
from .errors import ConveyorError

__all__ = ["Client", "ConveyorError", "Frames", "Result", "default_target", "frames", "job_spec",
           "to_rational", "transcode"]


def frames(input, target=None, **kwargs):
    """Client(target).frames(input, **kwargs); the channel closes with the iterator."""
    return Client(target).frames(input, _own_client=True, **kwargs)


def transcode(input, output, target=None, **kwargs):
    """Client(target).transcode(input, output, **kwargs)."""
    with Client(target) as client:
        return client.transcode(input, output, **kwargs)
