#!/usr/bin/env python3
# Writes the seed corpora of the fuzz targets (fuzz/corpus/<target>): small valid inputs of
# each kind the parsers accept, and the bad inputs of issue 8 as regression seeds (their
# names start with `bad_`). Plain Python (struct, json): no numpy.
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

# safetensors regression seeds: control bytes in names; many tensors (the quadratic parse).
st_bad = {
    "bad_control_names": st([("x\x00\n\x1b[2J", "U8", [1], b"\x01"), ("\x1b]0;t\x07", "U8", [1], b"\x02")]),
    "bad_many_tensors": st([("t%05d" % i, "U8", [1], bytes([i % 256])) for i in range(4000)]),
}
for name, data in st_bad.items():
    with open(os.path.join(here, "corpus", "safetensors", name), "wb") as f:
        f.write(data)

# Profiles: the shipped ones renamed `fuzz` (the loader checks name == file stem; the fuzz
# target loads them as fuzz.yaml), and the bad profiles of issue 8.
profiles = os.path.join(here, "..", "profiles")
text_seeds = {"profile": {}, "plan": {}, "stdin": {}, "value": {}}
for fn in sorted(os.listdir(profiles)):
    if fn in ("trn2.yaml", "cpu-sequential.yaml", "nvidia-h100-tc.yaml", "numpy-pairwise.yaml",
              "nvidia-h100-fp8-deepgemm.yaml", "nvidia-b200-mxfp8.yaml", "nvidia-b200-nvfp4.yaml", "trn3-mx.yaml"):
        body = open(os.path.join(profiles, fn)).read()
        stem = fn[: -len(".yaml")]
        text_seeds["profile"][stem] = body.replace("name: " + stem + "\n", "name: fuzz\n", 1).encode()
plan_profile = (
    "name: fuzz\nversion: 1\nsummary: x\nmodel: plan\n"
    "plan:\n  order: {value: %s, assumed: a}\n"
    "accumulator:\n  format: {value: fp32, assumed: a}\n  rounding: {value: rne, assumed: a}\n"
)
ok = plan_profile % "sequential"
trn2 = open(os.path.join(profiles, "trn2.yaml")).read().replace("name: trn2\n", "name: fuzz\n", 1)
h100 = open(os.path.join(profiles, "nvidia-h100-tc.yaml")).read().replace("name: nvidia-h100-tc\n", "name: fuzz\n", 1)
deepgemm = open(os.path.join(profiles, "nvidia-h100-fp8-deepgemm.yaml")).read().replace(
    "name: nvidia-h100-fp8-deepgemm\n", "name: fuzz\n", 1)
text_seeds["profile"].update({
    "bad_duplicate_key": (ok + "version: 2\n").encode(),
    "bad_second_document": (ok + "---\nname: fuzz\n").encode(),
    "bad_nan_ulps": (ok + "elementwise:\n  exp: {value: nan, assumed: a}\n").encode(),
    "bad_negative_ulps": (ok + "elementwise:\n  exp: {value: -2, assumed: a}\n").encode(),
    "bad_tile_k_2p63": trn2.replace("value: 128", "value: 9223372036854775807", 1).encode(),
    "bad_block_size_2p32": h100.replace("block_size:\n        value: 16", "block_size:\n        value: 4294967312", 1).encode(),
    "bad_instruction_k_2p31": h100.replace("instruction_k:\n        value: 16", "instruction_k:\n        value: 2147483648", 1).encode(),
    "bad_splitk_2p63": (plan_profile % "'splitk(9223372036854775807)'").encode(),
    "bad_promote_every_96": deepgemm.replace("value: 128\n", "value: 96\n", 1).encode(),
    "bad_scale_block_2p31": deepgemm.replace('"1x128,128x128"', '"1x2147483648"', 1).encode(),
    "bad_partial_sums_missing": deepgemm.replace("value: nvidia-h100-tc", "value: fuzz", 1).encode(),
    "bad_partial_sums_path": deepgemm.replace("value: nvidia-h100-tc", "value: ../profiles/trn2", 1).encode(),
    "bad_conversion": (ok.replace("assumed: because", "assumed: {a: b}")).encode(),
    "bad_deep_flow": (ok + "output: " + "[" * 3000 + "\n").encode(),
    "bad_deep_block": (ok + "output:\n" + "- " * 3000 + "x\n").encode(),
    "bad_aliases": ("name: fuzz\nx0: &a0 [l, l, l, l, l, l, l, l, l]\n" + "".join(
        "x%d: &a%d [%s]\n" % (i, i, ", ".join(["*a%d" % (i - 1)] * 9)) for i in range(1, 9))).encode(),
})

# Plans: 8 bytes of K (little-endian), then the text.
def plan_seed(k, text):
    return struct.pack("<Q", k) + text.encode()

for text in ("sequential", "reverse", "pairwise", "numpy", "blocked(128)", "blocked(64, pairwise)",
             "blocked(8192, numpy)", "splitk(4)", "strided(32)"):
    name = text.replace("(", "_").replace(")", "").replace(", ", "_")
    text_seeds["plan"][name] = plan_seed(4096, text)
text_seeds["plan"].update({
    "bad_splitk_2p63": plan_seed(16, "splitk(9223372036854775807)"),
    "bad_blocked_2p63_kmax": plan_seed(2**63 - 1, "blocked(9223372036854775807)"),
    "bad_pairwise_kmax": plan_seed(2**63 - 1, "pairwise"),
    "bad_empty": plan_seed(16, ""),
    "tree_4": plan_seed(4, "tree((0 1) (2 3))"),
    "tree_seq_5": plan_seed(5, "tree((((0 1) 2) 3) 4)"),
    "bad_tree_ternary": plan_seed(3, "tree((0 1 2))"),
    "bad_limit_kmax": plan_seed(2**63 - 1, "splitk(1099511627776)"),
    # found by fuzz_plan: numpy's pairwise depth of 8e11 terms, unmemoised, ran for minutes
    "bad_numpy_depth_timeout": plan_seed(0x2800000000100001, "blocked(801104857690, numpy)"),
})

# stdin: the first byte picks the format (see stdin_fuzz.cpp), then lines of hex patterns.
text_seeds["stdin"].update({
    "fp32_lines": b"\x08" + b"0x3f800000\n0X7F800000 0x00000001\r\n\n7fc00000\n",
    "bf16_arith": b"\x05" + b"0x3f80 0x4000\n3eab\t3dcd\n",
    "fp8_all": b"\x02" + b"".join(b"0x%02x\n" % i for i in range(256)),
    "bad_tokens": b"\x06" + b"0x1ffff\n0xg\n-1\n0x\n\x1b[31m\n0x3c00 0x3c00 0x3c00 0x3c00 0x3c00\n",
    "bad_no_final_newline": b"\x00" + b"0x1\n0x0f",
})

# Value literals of `numfid bits`.
for name, text in {
    "decimal": "0.1", "third": "0.333333333333333333333333333333", "midpoint": "1.000488281250000000000001",
    "hexfloat": "0x1.8p-9", "neg_zero": "-0", "inf": "-Infinity", "nan": "nan", "big_exp": "1e400",
    "tiny": "4.9e-324", "long": "1" * 400 + ".5e-380",
    "bad_exp_overflow": "1e99999999999999999999", "bad_hex_no_p": "0x1.8", "bad_control": "1\x1b[2J",
    "bad_sign_only": "-", "bad_two_points": "1.2.3",
}.items():
    text_seeds["value"][name] = text.encode()

for folder, seeds in text_seeds.items():
    os.makedirs(os.path.join(here, "corpus", folder), exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(here, "corpus", folder, name), "wb") as f:
            f.write(data)
