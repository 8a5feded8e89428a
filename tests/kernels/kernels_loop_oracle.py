"""Plain-Python loop implementations of the kernel ops: an independent oracle for the tests.

Written from the op definitions with scalar floats and explicit grids (the E4M3 and E2M1 value
tables are enumerated from their bit layouts), sharing no code with ``dsv4.kernels.reference``.
"""

from __future__ import annotations

import math


def _e4m3_values() -> list[tuple[float, int]]:
    """Every finite non-negative E4M3 value with its mantissa bits (for ties-to-even)."""
    values = []
    for code in range(0x7F):  # 0x7F is NaN
        exponent, mantissa = code >> 3, code & 7
        if exponent == 0:
            value = mantissa / 8 * 2.0**-6
        else:
            value = (1 + mantissa / 8) * 2.0 ** (exponent - 7)
        values.append((value, mantissa))
    return values


E4M3 = _e4m3_values()
E2M1 = [(0.0, 0), (0.5, 1), (1.0, 0), (1.5, 1), (2.0, 0), (3.0, 1), (4.0, 0), (6.0, 1)]


def round_to_grid(value: float, grid: list[tuple[float, int]]) -> float:
    """Nearest grid magnitude, ties to the even mantissa, saturating at the top; sign kept."""
    mag = abs(value)
    best = min(grid, key=lambda entry: (abs(entry[0] - mag), entry[1]))
    return math.copysign(best[0], value)


def rms_norm(rows: list[list[float]], weight: list[float], eps: float) -> list[list[float]]:
    result = []
    for row in rows:
        inv = 1.0 / math.sqrt(sum(v * v for v in row) / len(row) + eps)
        result.append([v * inv * w for v, w in zip(row, weight)])
    return result


def sinkhorn(matrix: list[list[float]], iters: int, eps: float) -> list[list[float]]:
    n = len(matrix)
    p = []
    for row in matrix:
        top = max(row)
        exps = [math.exp(v - top) for v in row]
        p.append([e / sum(exps) + eps for e in exps])

    def normalise_cols():
        for j in range(n):
            total = sum(p[i][j] for i in range(n)) + eps
            for i in range(n):
                p[i][j] /= total

    normalise_cols()
    for _ in range(iters - 1):
        for i in range(n):
            total = sum(p[i]) + eps
            p[i] = [v / total for v in p[i]]
        normalise_cols()
    return p


def nvfp4_fake_quant(values: list[float]) -> list[float]:
    g = max(abs(v) for v in values) / (448 * 6)
    if g == 0:
        return [0.0] * len(values)
    result = []
    for start in range(0, len(values), 16):
        block = values[start : start + 16]
        s = round_to_grid(min(max(abs(v) for v in block) / 6 / g, 448.0), E4M3)
        if s == 0:
            result.extend([0.0] * 16)
            continue
        result.extend(round_to_grid(v / (s * g), E2M1) * s * g for v in block)
    return result
