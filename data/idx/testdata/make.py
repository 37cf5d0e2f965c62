"""Writes the golden IDX files of data/idx's tests (run from this directory
with /usr/bin/python3; the files are committed, so the tests need no
Python). Elements big-endian, as the format requires."""
import gzip
import struct

import numpy as np


def idx(code, arr, big):
    return bytes([0, 0, code, arr.ndim]) + b"".join(struct.pack(">I", d) for d in arr.shape) + arr.astype(big).tobytes()


images = (np.arange(2 * 3 * 4) * 10 % 256).astype(np.uint8).reshape(2, 3, 4)
open("images-idx3-ubyte", "wb").write(idx(0x08, images, "u1"))
with gzip.open("images-idx3-ubyte.gz", "wb") as f:
    f.write(idx(0x08, images, "u1"))
open("labels-idx1-ubyte", "wb").write(idx(0x08, np.array([7, 2], dtype=np.uint8), "u1"))
open("i8.idx", "wb").write(idx(0x09, np.array([-128, -1, 0, 127], dtype=np.int8), "i1"))
open("i16.idx", "wb").write(idx(0x0B, np.array([[-32768, 300], [7, 32767]], dtype=np.int16), ">i2"))
open("i32.idx", "wb").write(idx(0x0C, np.array([-(2**31), 65536, 1], dtype=np.int32), ">i4"))
open("f32.idx", "wb").write(idx(0x0D, np.array([1.5, -0.25, 3e38], dtype=np.float32), ">f4"))
open("f64.idx", "wb").write(idx(0x0E, np.array([[1e-300, -2.5]], dtype=np.float64), ">f8"))
