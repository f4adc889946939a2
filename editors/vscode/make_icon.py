"""Draws the extension's icon.png (128x128): a GPU die with its pins, and a token threaded
through three ops (the rewrite's chain of `async [%t] -> %t'`). Standard library only:

    python3 make_icon.py
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

SIZE = 128
BACK = (30, 41, 59)
DIE = (56, 189, 148)
PIN = (148, 163, 184)
OP = (241, 245, 249)
TOKEN = (250, 204, 21)


def draw() -> list[list[tuple[int, int, int]]]:
    px = [[BACK] * SIZE for _ in range(SIZE)]

    def rect(x0, y0, x1, y1, color):
        for y in range(max(0, y0), min(SIZE, y1)):
            for x in range(max(0, x0), min(SIZE, x1)):
                px[y][x] = color

    def disc(cx, cy, r, color):
        for y in range(cy - r, cy + r + 1):
            for x in range(cx - r, cx + r + 1):
                if 0 <= x < SIZE and 0 <= y < SIZE and (x - cx) ** 2 + (y - cy) ** 2 <= r * r:
                    px[y][x] = color

    for k in range(5):  # pins on the four sides
        at = 30 + k * 16
        rect(at, 8, at + 6, 20, PIN)
        rect(at, 108, at + 6, 120, PIN)
        rect(8, at, 20, at + 6, PIN)
        rect(108, at, 120, at + 6, PIN)
    rect(20, 20, 108, 108, DIE)
    for k, y in enumerate((36, 60, 84)):  # three ops, a token between each
        rect(32, y, 96, y + 10, OP)
        if k < 2:
            rect(62, y + 10, 66, y + 24, TOKEN)
            disc(64, y + 17, 5, TOKEN)
    return px


def png(px) -> bytes:
    raw = b"".join(b"\x00" + bytes(c for p in row for c in p) for row in px)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(
            ">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", SIZE, SIZE, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


if __name__ == "__main__":
    Path(__file__).with_name("icon.png").write_bytes(png(draw()))
