#!/usr/bin/env python3
"""Records np.sum over float32 arrays as ground truth for numfid's `numpy` reduction plan.

Each array is regenerated bit for bit in tests/plan_test.cpp from (n, seed) with the same
SplitMix64 stream, so only n, seed and numpy's result bits are stored.
Run with Debian's python3-numpy: /usr/bin/python3 scripts/record-numpy-sums.py > tests/data/numpy/sum_f32.txt
"""
import numpy as np

MASK = (1 << 64) - 1


def splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


def array(n, seed):
    """float32 values: random sign and 23-bit mantissa, exponent in [-20, 20]."""
    state = seed
    bits = np.empty(n, dtype=np.uint32)
    for i in range(n):
        state, z = splitmix64(state)
        sign = (z >> 63) & 1
        exp = 127 - 20 + (z >> 32) % 41
        mant = z & 0x7FFFFF
        bits[i] = (sign << 31) | (exp << 23) | mant
    return bits.view(np.float32)


def main():
    print(f"# np.sum(float32 array) recorded with numpy {np.__version__}; columns: n seed result_bits")
    sizes = [1, 2, 7, 8, 9, 15, 16, 17, 100, 127, 128, 129, 130, 255, 256, 1000, 4095, 8191, 8192, 8193,
             16384, 20000, 50000]
    for i, n in enumerate(sizes):
        for seed in (1 + 100 * i, 2 + 100 * i):
            s = np.sum(array(n, seed))
            print(f"{n} {seed} 0x{int(np.float32(s).view(np.uint32)):08x}")


if __name__ == "__main__":
    main()
