"""A small PNG decoder (8-bit, non-interlaced greyscale/RGB/RGBA: what Chromium writes) so tests can
look at a screenshot's pixels without an imaging library."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np

SIGNATURE = b"\x89PNG\r\n\x1a\n"
CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}


def decode_png(path: Path) -> np.ndarray:
    """Pixels as a (height, width, channels) uint8 array."""
    data = path.read_bytes()
    if data[:8] != SIGNATURE:
        raise ValueError(f"{path} is not a PNG file")
    pos, idat, header = 8, [], None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
    if header is None:
        raise ValueError(f"{path}: no IHDR chunk")
    width, height, depth, colour_type, _, _, interlace = header
    if depth != 8 or interlace or colour_type not in CHANNELS:
        raise ValueError(f"{path}: unsupported PNG (depth {depth}, colour type {colour_type}, interlace {interlace})")
    bpp = CHANNELS[colour_type]
    stride = width * bpp
    raw = zlib.decompress(b"".join(idat))
    out = np.zeros((height, stride), dtype=np.uint8)
    prior = np.zeros(stride, dtype=np.int64)
    for y in range(height):
        start = y * (stride + 1)
        kind = raw[start]
        line = np.frombuffer(raw, dtype=np.uint8, count=stride, offset=start + 1).astype(np.int64)
        if kind == 0:
            cur = line
        elif kind == 1:  # Sub: a running sum per channel
            cur = np.cumsum(line.reshape(width, bpp), axis=0).reshape(-1) & 255
        elif kind == 2:  # Up
            cur = (line + prior) & 255
        elif kind in (3, 4):  # Average, Paeth: each byte depends on the one bpp before it
            cur = np.frombuffer(_sequential(kind, bytearray(line.astype(np.uint8).tobytes()),
                                            prior.astype(np.uint8).tobytes(), bpp), dtype=np.uint8).astype(np.int64)
        else:
            raise ValueError(f"{path}: bad filter type {kind} in row {y}")
        out[y] = cur
        prior = cur
    return out.reshape(height, width, bpp)


def _sequential(kind: int, cur: bytearray, prior: bytes, bpp: int) -> bytes:
    for i in range(len(cur)):
        a = cur[i - bpp] if i >= bpp else 0
        b = prior[i]
        if kind == 3:
            cur[i] = (cur[i] + ((a + b) >> 1)) & 255
            continue
        c = prior[i - bpp] if i >= bpp else 0
        pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
        cur[i] = (cur[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    return bytes(cur)
