#!/usr/bin/python3
# Writes the .npy files of this folder with numpy itself (the recorded-data oracle of
# tests/io_npy_test.cpp: files as numpy writes them, not as numfid's writer does).
# Made with Debian bookworm's python3-numpy 1.24.2:  /usr/bin/python3 make_npy_files.py
import os
import numpy as np
from numpy.lib import format as npf

here = os.path.dirname(os.path.abspath(__file__))

def save(name, arr, version=None):
    with open(os.path.join(here, name), "wb") as f:
        npf.write_array(f, arr, version=version)

# Values v[i, j, ...] = a small formula the C++ test recomputes independently.
base = (np.arange(24, dtype=np.float64) * 0.5 - 3.0).reshape(2, 3, 4)   # i*6 + j*2 + k*0.5 - 3
save("f4_c.npy", base.astype("<f4"))
save("f8_fortran_be.npy", np.asfortranarray(base.astype(">f8")))
save("f2_v2.npy", base.astype("<f2"), version=(2, 0))
ints = (np.arange(6) * 37 - 100).reshape(2, 3)                             # i*111 + j*37 - 100
save("i2_be.npy", ints.astype(">i2"))
save("i1.npy", ints.astype("|i1"))
save("u4_fortran.npy", np.asfortranarray((np.arange(6) * 1000003).reshape(3, 2).astype("<u4")))
save("u1.npy", np.arange(5, dtype="|u1") * 50)
# bf16 bit patterns 1.0, -2.0, NaN, 0x1p-133 as opaque 2-byte void (how ml_dtypes arrays are saved)
save("v2_bf16.npy", np.array([0x3F80, 0xC000, 0x7FC0, 0x0001], dtype="<u2").view("V2"))
# fp8 e4m3 patterns 448, -0.5, NaN as opaque 1-byte void
save("v1_e4m3.npy", np.array([0x7E, 0xB0, 0x7F], dtype="|u1").view("V1"))
# a one-field structured dtype with a non-latin1 field name: numpy must write version 3.0
save("u2_struct_v3.npy", np.array([(0x3F80,), (0x4049,)], dtype=[("\u03b1", "<u2")]))
save("scalar_f4.npy", np.array(3.5, dtype="<f4"))
save("empty_f4.npy", np.zeros((0, 3), dtype="<f4"))
