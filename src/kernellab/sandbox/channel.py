"""Framed messages between the judge and a candidate child over a Unix socket.

Tensors cross by reference where they live on the GPU (CUDA IPC handles, so the judge reads the very
memory the candidate wrote, after the child synchronised) and by value where they live on the CPU.
The judge decodes with an allow-list unpickler: a child runs untrusted code, so what it sends is
data, never code, and can never name a class or function outside the list below.

The child's end is a file descriptor in the candidate's process: any code there can read the judge's
requests (and their tokens) from it and write well-formed answers to it. So the harness signs what it
sends with a key only it holds (keyed BLAKE2b over the message's number and bytes; the key comes with
the child's spec, before any candidate code, and lives only inside the hash object), and the judge
refuses, before decoding, any message whose tag is not the harness's (``ForgedMessage``).
"""

from __future__ import annotations

import hashlib
import hmac
import io
import pickle
import select
import socket
import struct
import time
from typing import Any

import torch
# Bound at import, before any candidate runs: an import inside ``reducer_override`` would resolve
# through ``sys.modules`` at every send, after the candidate's code (``integrity._bound_modules``).
from torch.multiprocessing.reductions import reduce_tensor

from kernellab.sandbox.plain import harness_method

# Through the class: an instance attribute ``t.detach = f`` on a tensor being sent would otherwise run
# in the send. ``detach`` returns a new tensor object, so what follows works on the harness's own.
_detach = harness_method(torch._C.TensorBase.detach)

MAX_MESSAGE_BYTES = 4 << 30
_HEADER = struct.Struct("!Q")
TAG_BYTES = 32
KEY_BYTES = 32


class ChannelClosed(ConnectionError):
    """The peer closed the socket or died."""


class ChannelTimeout(TimeoutError):
    """The peer sent nothing within the deadline."""


class ProtocolError(RuntimeError):
    """The peer sent something that is not a well-formed message of the protocol."""


class ForgedMessage(ProtocolError):
    """A message whose tag is not the one the key's holder would have made: written by other code."""


def _keyed(key: bytes | None) -> Any:
    """The hash object every tag starts from: it holds the key, which need not be kept elsewhere."""
    return None if key is None else hashlib.blake2b(key=key, digest_size=TAG_BYTES)


def _rebuild_cpu(dtype: str, shape: tuple[int, ...], data: bytes) -> torch.Tensor:
    if not isinstance(data, (bytes, bytearray)):
        raise ProtocolError("tensor payload is not bytes")
    dt = getattr(torch, dtype.removeprefix("torch."), None)
    if not isinstance(dt, torch.dtype):
        raise ProtocolError(f"unknown dtype {dtype!r}")
    flat = torch.frombuffer(bytearray(data), dtype=torch.uint8) if data else torch.empty(0, dtype=torch.uint8)
    return flat.view(dt).reshape(shape).clone() if flat.numel() else torch.empty(shape, dtype=dt)


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj: Any):
        if isinstance(obj, torch.Tensor):
            tensor = _detach(obj)
            if tensor.is_cuda:
                return reduce_tensor(tensor)
            contiguous = tensor.contiguous()
            raw = contiguous.reshape(-1).view(torch.uint8).numpy().tobytes() if contiguous.numel() else b""
            return _rebuild_cpu, (str(contiguous.dtype), tuple(contiguous.shape), raw)
        return NotImplemented


_ALLOWED = {
    ("kernellab.sandbox.channel", "_rebuild_cpu"),
    ("torch.multiprocessing.reductions", "rebuild_cuda_tensor"),
    ("torch.multiprocessing.reductions", "rebuild_tensor"),
    ("torch", "Tensor"),
    ("torch", "Size"),
    ("torch", "device"),
    ("torch.serialization", "_get_layout"),  # a torch.layout argument: looks its name up among torch's layouts
    ("torch.storage", "UntypedStorage"),
    ("torch.storage", "TypedStorage"),
    ("torch", "TypedStorage"),
    ("torch", "UntypedStorage"),
    ("builtins", "slice"),
    ("builtins", "complex"),
    ("builtins", "set"),
    ("builtins", "frozenset"),
    ("collections", "OrderedDict"),
}


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        if module == "torch" and isinstance(getattr(torch, name, None), torch.dtype):
            return getattr(torch, name)
        raise ProtocolError(f"message names a forbidden object {module}.{name}")


def dumps(obj: Any) -> bytes:
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buffer.getvalue()


def loads(data: bytes) -> Any:
    try:
        return _Unpickler(io.BytesIO(data)).load()
    except ProtocolError:
        raise
    except Exception as exc:  # malformed bytes from an untrusted peer
        raise ProtocolError(f"malformed message: {type(exc).__name__}: {exc}") from None


class Channel:
    """One end of a judge↔child connection: length-prefixed pickles with deadlines. With ``signing``
    every message sent carries a tag made with that key; with ``verifying`` every message received must
    carry the tag that key makes, counted from the connection's first message (so none is replayed or
    dropped unnoticed)."""

    def __init__(self, sock: socket.socket, signing: bytes | None = None, verifying: bytes | None = None):
        self.sock = sock
        self.sock.setblocking(True)
        self._signing, self._verifying = _keyed(signing), _keyed(verifying)
        self._sent = self._received = 0

    @classmethod
    def from_fd(cls, fd: int, signing: bytes | None = None) -> Channel:
        return cls(socket.socket(fileno=fd), signing=signing)

    @staticmethod
    def _tag(keyed: Any, number: int, payload: bytes) -> bytes:
        tag = keyed.copy()
        tag.update(_HEADER.pack(number))
        tag.update(payload)
        return tag.digest()

    def send(self, obj: Any) -> None:
        payload = dumps(obj)
        tag = b"" if self._signing is None else self._tag(self._signing, self._sent, payload)
        self._sent += 1
        try:
            self.sock.sendall(_HEADER.pack(len(payload)) + payload + tag)
        except OSError as exc:
            raise ChannelClosed(str(exc)) from None

    def recv(self, timeout: float | None = None) -> Any:
        deadline = None if timeout is None else time.monotonic() + timeout
        (size,) = _HEADER.unpack(self._read(_HEADER.size, deadline))
        if size > MAX_MESSAGE_BYTES:
            raise ProtocolError(f"message of {size} bytes exceeds the limit")
        payload = self._read(size, deadline)
        if self._verifying is not None:
            tag = self._read(TAG_BYTES, deadline)
            expected = self._tag(self._verifying, self._received, payload)
            self._received += 1
            if not hmac.compare_digest(tag, expected):
                raise ForgedMessage("a message on the channel that the harness did not sign")
        return loads(payload)

    def _read(self, n: int, deadline: float | None) -> bytes:
        chunks, got = [], 0
        while got < n:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self.sock], [], [], left)[0]:
                    raise ChannelTimeout("no answer within the deadline")
            try:
                chunk = self.sock.recv(min(n - got, 1 << 22))
            except OSError as exc:
                raise ChannelClosed(str(exc)) from None
            if not chunk:
                raise ChannelClosed("peer closed the connection")
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
