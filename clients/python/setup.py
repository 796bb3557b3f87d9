"""Builds the conveyor package: its gRPC stubs are generated from the proto in the tree
(../../proto, or $CONVEYOR_PROTO_DIR) with protoc and grpc_python_plugin, as Debian's
protobuf-compiler and protobuf-compiler-grpc install them. Nothing generated is committed.
"""

import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO = "conveyor/v1/transcoder.proto"


def generate_stubs(out_dir):
    """conveyor/v1/transcoder_pb2.py and transcoder_pb2_grpc.py under out_dir."""
    proto_dir = os.environ.get("CONVEYOR_PROTO_DIR") or os.path.join(HERE, "..", "..", "proto")
    if not os.path.exists(os.path.join(proto_dir, PROTO)):
        raise SystemExit("conveyor: no %s under %s (set CONVEYOR_PROTO_DIR)" % (PROTO, proto_dir))
    protoc = shutil.which("protoc")
    plugin = shutil.which("grpc_python_plugin")
    if not protoc or not plugin:
        raise SystemExit("conveyor: protoc and grpc_python_plugin are needed to build "
                         "(apt-get install protobuf-compiler protobuf-compiler-grpc)")
    # /usr/include holds google/protobuf/timestamp.proto (libprotobuf-dev).
    subprocess.run([protoc, "-I" + proto_dir, "-I/usr/include", "--python_out=" + out_dir,
                    "--grpc_out=" + out_dir, "--plugin=protoc-gen-grpc=" + plugin, PROTO], check=True)


class BuildPyWithStubs(build_py):
    def run(self):
        super().run()
        generate_stubs(self.build_lib)


setup(cmdclass={"build_py": BuildPyWithStubs})
