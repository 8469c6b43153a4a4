#!/usr/bin/env python3
"""An independent checker of strip's certified lower bounds.

A certificate says: its buffers (a sub-problem of one address space) have
no placement whose peak is below `height`. This checker re-solves each
sub-problem by brute force, sharing no code with the exact search it
checks: every order of the buffers is dropped onto a skyline (each buffer
at the lowest aligned offset above the buffers already dropped that share
its time). Sorting any placement by offset and dropping it in that order
gives a placement no higher, so the least height over all orders is the
optimum. Only small sub-problems (MAX_BUFFERS) are checked so.

A larger sub-problem whose buffers all share an instant (a clique) is
checked by its padded load: there the buffers are apart, each at a
multiple of g (the least alignment among them), so sorted by offset each
but the topmost takes its size rounded up to g. When every alignment is g,
a stack of them (the one rounded most on top) peaks at that height: a
clique certificate above it does not hold.

  cert_check.py REPLAY.json          check every certificate in the file
  cert_check.py --optimum CSV        print a MiniMalloc CSV's load and optimum
  cert_check.py --find N SEED        print a CSV of N buffers whose optimum
                                     is above its load (for tests)

Exit status: 0 every certificate holds, 1 one does not, 2 bad input, 3
every certificate it could check holds but some were too large for it.
"""
import json
import random
import sys

MAX_BUFFERS = 9


def align_up(x, a):
    return (x + a - 1) // a * a


def load(bufs):
    times = sorted({b[1] for b in bufs} | {b[2] for b in bufs})
    return max((sum(b[0] for b in bufs if b[1] <= t < b[2]) for t in times),
               default=0)


def fits_below(bufs, cap):
    """Is there a placement of bufs (size, start, end, align) with every
    top <= cap?"""
    n = len(bufs)
    placed = []  # (offset, top, start, end)

    def go(used):
        if used == (1 << n) - 1:
            return True
        for i in range(n):
            if used >> i & 1:
                continue
            size, start, end, align = bufs[i]
            floor = 0
            for (_, top, s, e) in placed:
                if s < end and start < e and top > floor:
                    floor = top
            off = align_up(floor, align)
            if off + size > cap:
                continue
            placed.append((off, off + size, start, end))
            ok = go(used | 1 << i)
            placed.pop()
            if ok:
                return True
        return False

    return go(0)


def optimum(bufs):
    lo = load(bufs)
    hi = sum(b[0] + b[3] for b in bufs)
    while lo < hi:  # the least cap that fits
        mid = (lo + hi) // 2
        if fits_below(bufs, mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def clique_check(bufs, h):
    """For buffers (size, start, end, align) sharing an instant: True when
    their padded load proves h, False when a stack of them peaks below h,
    None when neither (no clique, or mixed alignments below h)."""
    if max(b[1] for b in bufs) >= min(b[2] for b in bufs):
        return None
    g = min(b[3] for b in bufs)
    rounded = [(align_up(b[0], g) - b[0], b[0]) for b in bufs]
    lowest = sum(align_up(size, g) for _, size in rounded) - \
        max(pad for pad, _ in rounded)
    if lowest >= h:
        return True
    if any(b[3] != g for b in bufs):
        return None
    top = 0
    for pad, size in sorted(rounded):  # the one rounded most last
        top = align_up(top, g) + size
    assert top == lowest
    return False


def check(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        print(f"{path}: {e}", file=sys.stderr)
        return 2
    runs = doc.get("runs", [doc])
    checked = large = 0
    for run in runs:
        for res in run.get("results", []):
            for c in res.get("certificates", []):
                cert = c.get("certificate")
                if c["certified_bound"] < c["lower_bound"]:
                    print(f"{path}: {res['strategy']}: certified bound "
                          f"{c['certified_bound']} below the load",
                          file=sys.stderr)
                    return 1
                if cert is None:
                    if c["certified_bound"] != c["lower_bound"]:
                        print(f"{path}: a bound above the load without a "
                              "sub-problem", file=sys.stderr)
                        return 1
                    continue
                bufs = [(b["size"], b["start"], b["end"], b["align"])
                        for b in cert["buffers"]]
                h = cert["height"]
                if h != c["certified_bound"]:
                    print(f"{path}: height {h} is not the certified bound",
                          file=sys.stderr)
                    return 1
                if len(bufs) > MAX_BUFFERS:
                    verdict = clique_check(bufs, h)
                    if verdict is False:
                        print(f"{path}: space {c['space']}: a stack of the "
                              f"clique peaks below {h}: the bound does not "
                              "hold", file=sys.stderr)
                        return 1
                    if verdict:
                        checked += 1
                        print(f"{c['space']}: {len(bufs)} buffers at one "
                              f"instant, padded to no placement below {h} "
                              f"(load {c['lower_bound']})")
                        continue
                    print(f"{c['space']}: a sub-problem of {len(bufs)} "
                          f"buffers: more than this checker's {MAX_BUFFERS}")
                    large += 1
                    continue
                if fits_below(bufs, h - 1):
                    print(f"{path}: space {c['space']}: the sub-problem "
                          f"fits below {h}: the bound does not hold",
                          file=sys.stderr)
                    return 1
                checked += 1
                print(f"{c['space']}: {len(bufs)} buffers, no placement "
                      f"below {h} (load {c['lower_bound']})")
    print(f"{checked} certificates hold, {large} too large to check")
    return 3 if large else 0


def read_csv(path):
    bufs = []
    with open(path) as f:
        next(f)
        for line in f:
            if line.strip():
                _, lo, hi, size = (int(x) for x in line.split(","))
                bufs.append((size, lo, hi, 1))
    return bufs


def find(n, seed):
    rng = random.Random(seed)
    while True:
        bufs = []
        for _ in range(n):
            s = rng.randrange(0, 6)
            bufs.append((rng.randrange(1, 6), s, s + rng.randrange(1, 4), 1))
        if optimum(bufs) > load(bufs):
            print("id,lower,upper,size")
            for i, (size, s, e, _) in enumerate(bufs):
                print(f"{i},{s},{e},{size}")
            return 0


def main(argv):
    if len(argv) == 3 and argv[1] == "--optimum":
        bufs = read_csv(argv[2])
        print(load(bufs), optimum(bufs))
        return 0
    if len(argv) == 4 and argv[1] == "--find":
        return find(int(argv[2]), int(argv[3]))
    if len(argv) == 2:
        return check(argv[1])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
