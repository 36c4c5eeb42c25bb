#!/usr/bin/env python3
# Writes the seed corpora of the io fuzz targets (fuzz/corpus/npy, fuzz/corpus/safetensors):
# small valid files of each kind the readers accept. Plain Python (struct, json): no numpy.
#   python3 fuzz/make_corpus.py
import json
import os
import struct

here = os.path.dirname(os.path.abspath(__file__))


def npy(version, header, data):
    length_fmt = "<H" if version == 1 else "<I"
    prefix = 8 + struct.calcsize(length_fmt)
    h = header.encode("utf8")
    pad = 64 - (prefix + len(h) + 1) % 64
    h += b" " * pad + b"\n"
    return b"\x93NUMPY" + bytes([version, 0]) + struct.pack(length_fmt, len(h)) + h + data


def st(entries, metadata=None):
    header = {}
    if metadata:
        header["__metadata__"] = metadata
    data = b""
    for name, dtype, shape, payload in entries:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(payload)]}
        data += payload
    h = json.dumps(header, separators=(",", ":")).encode("utf8")
    h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + data


def dict_(descr, fortran, shape):
    return "{'descr': %s, 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape)


f4 = struct.pack("<6f", 1, -2, 3.5, 0.1, float("inf"), float("nan"))
npy_seeds = {
    "f4_v1": npy(1, dict_("'<f4'", False, "(2, 3)"), f4),
    "f8_be_fortran": npy(1, dict_("'>f8'", True, "(2, 2)"), struct.pack(">4d", 1, 2, 3, 4)),
    "i2_v2": npy(2, dict_("'<i2'", False, "(3,)"), struct.pack("<3h", -1, 0, 300)),
    "u2_struct_v3": npy(3, dict_("[('\u03b1', '<u2')]", False, "(2,)"), struct.pack("<2H", 0x3F80, 0x4049)),
    "v2_bf16": npy(1, dict_("'|V2'", False, "(2,)"), struct.pack("<2H", 0x3F80, 0xC000)),
    "v2_struct": npy(1, dict_("[('', '|V2')]", False, "(1, 2)"), struct.pack("<2H", 0x7FC0, 0x0001)),
    "v1_e4m3": npy(1, dict_("'|V1'", False, "(3,)"), bytes([0x7E, 0xB0, 0x7F])),
    "u1_scalar": npy(1, dict_("'|u1'", False, "()"), bytes([7])),
    "u4_fortran3d": npy(1, dict_("'<u4'", True, "(2, 1, 2)"), struct.pack("<4I", 1, 2, 3, 4)),
    "f2_empty": npy(1, dict_("'<f2'", False, "(0, 3)"), b""),
    "i1_native": npy(1, dict_("'=i1'", False, "(2L,)"), bytes([0x80, 0x7F])),
}
st_seeds = {
    "two": st([("a", "F32", [2], struct.pack("<2f", 1, -2)), ("b", "BF16", [2, 1], struct.pack("<2H", 0x3F80, 0x7F80))],
              {"format": "pt"}),
    "fp8": st([("e4", "F8_E4M3", [3], bytes([0x7E, 0x80, 0x7F])), ("e5", "F8_E5M2", [2], bytes([0x3C, 0xFB]))]),
    "ints": st([("i8", "I8", [2], bytes([0x80, 1])), ("u8", "U8", [1], bytes([255])),
                ("i32", "I32", [1, 1], struct.pack("<i", -5)), ("i16", "I16", [1], struct.pack("<h", -2))]),
    "floats": st([("f16", "F16", [2], struct.pack("<2H", 0x3C00, 0xFC00)), ("f64", "F64", [1], struct.pack("<d", 0.1)),
                  ("u16", "U16", [1], struct.pack("<H", 9)), ("u32", "U32", [1], struct.pack("<I", 9))]),
    "empty_and_scalar": st([("e", "F32", [0, 4], b""), ("s", "F32", [], struct.pack("<f", 2.5))]),
    "unsupported": st([("x", "I64", [1], struct.pack("<q", 1)), ("y", "U8", [1], b"\x01")]),
}
for folder, seeds in (("npy", npy_seeds), ("safetensors", st_seeds)):
    os.makedirs(os.path.join(here, "corpus", folder), exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(here, "corpus", folder, name), "wb") as f:
            f.write(data)
