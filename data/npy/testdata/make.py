"""Writes the golden files of data/npy's tests with NumPy (run from this
directory with /usr/bin/python3; the files are committed, so the tests
need no Python)."""
import numpy as np

np.save("f4.npy", (np.arange(6, dtype="<f4").reshape(2, 3) * 0.5 - 1))
np.save("f8_big.npy", np.array([[1.5, -2.25], [3e300, -0.0]], dtype=">f8"))
np.save("i4.npy", np.array([[-7, 0, 2**31 - 1]], dtype="<i4"))
np.save("i8_big.npy", np.array([-(2**40), 5], dtype=">i8"))
np.save("u1.npy", np.arange(24, dtype="u1").reshape(2, 3, 4))
np.save("b1.npy", np.array([True, False, True]))
np.save("fortran.npy", np.asfortranarray(np.arange(24, dtype="<i8").reshape(2, 3, 4)))
np.save("scalar.npy", np.float64(3.25))
np.save("empty.npy", np.zeros((0, 3), dtype="<f4"))
with open("v2.npy", "wb") as f:
    np.lib.format.write_array(f, np.array([1.0, 2.0], dtype="<f4"), version=(2, 0))
np.save("object.npy", np.array([1, "a"], dtype=object), allow_pickle=True)
np.save("i2.npy", np.array([1, 2], dtype="<i2"))
x = np.arange(12, dtype="<f4").reshape(4, 3)
y = np.array([0, 1, 1, 0], dtype="<i8")
np.savez("archive.npz", x=x, y=y)
np.savez_compressed("compressed.npz", x=x, y=y)
np.save("f2.npy", np.array([[0.1, -2.5, 65504], [6e-8, -0.0, np.inf]], dtype="<f2"))
np.save("f2_big.npy", np.array([1.5, -1000.5], dtype=">f2"))
