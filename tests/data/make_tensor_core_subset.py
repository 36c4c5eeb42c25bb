#!/usr/bin/env python3
"""Cuts the compact subset of the recorded tensor-core vectors kept in the repository.

Source: the full data set (Khattak & Mikaitis, north-numerical-computing/MATLAB-tensor-core,
folder model_validation/, BSD 2-Clause), 5000 records per GPU x input format, laid out as
GPU/INPUT/{a,b}_GPU_INPUT.txt, c_GPU_fp32.txt, d_GPU_OUT.txt (one record per line).

Selection (deterministic): record i is kept if i % EVERY == 0 (the same records from every
file of a folder, so a, b, c and d stay aligned). Each kept line is copied byte for byte, in
the original order, so the tests read the subset with the same loader; records.txt beside
the data lists the original (0-based) record number of every kept line.

Usage (from the repository root):
  python3 tests/data/make_tensor_core_subset.py ../shared/data/tensor-core-vectors \
      tests/data/tensor-core-vectors
"""
import pathlib
import shutil
import sys

EVERY = 25


def main(src: pathlib.Path, dst: pathlib.Path) -> None:
    for gpu in sorted(p for p in src.iterdir() if p.is_dir()):
        for inp in sorted(p for p in gpu.iterdir() if p.is_dir()):
            files = sorted(inp.glob("*.txt"))
            lines = {f.name: f.read_bytes().splitlines(keepends=True) for f in files}
            counts = {len(v) for v in lines.values()}
            if len(counts) != 1:
                raise SystemExit(f"{inp}: files of different lengths {counts}")
            n = counts.pop()
            keep = list(range(0, n, EVERY))
            out = dst / gpu.name / inp.name
            out.mkdir(parents=True, exist_ok=True)
            for name, ls in lines.items():
                (out / name).write_bytes(b"".join(ls[i] for i in keep))
            (out / "records.txt").write_text("".join(f"{i}\n" for i in keep))
    shutil.copyfile(src / "LICENCE", dst / "LICENCE")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    main(pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]))
