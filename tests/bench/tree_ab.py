#!/usr/bin/env python3
"""A/B benchmark of the strategies and readers that keep a balanced tree
(core/tree): two builds side by side, runs alternated, best of REPS, CPU
seconds (user + system) of the whole process, which a loaded machine
disturbs less than wall time.

  tests/bench/tree_ab.py BUILD_A BUILD_B [OPS [WORKLOAD...]]

OPS (default 1000000) sizes the generated traces: bfc_bench.sh's two
random op streams (tensors, small), place_gen.py's malloc stream (OPS/5
allocations, for the sweep placer inside strip) and bench_foundation's
CSV (validate). A WORKLOAD names a row by a word in it (bfc, validate...).
The snapshot row reads ../shared's largest fidelity snapshot when there.
REPS=N (default 3). Prints a Markdown table of B/A ratios.
"""
import os, resource, subprocess, sys, tempfile

here = os.path.dirname(os.path.abspath(__file__))
src = os.path.dirname(os.path.dirname(here))
A, B = sys.argv[1], sys.argv[2]
ops = int(sys.argv[3]) if len(sys.argv) > 3 else 1000000
sel = sys.argv[4:]
reps = int(os.environ.get("REPS", "3"))
snap = os.path.join(src, "..", "shared", "snapshots", "fidelity",
                    "cs336_2.7b_forward.pickle")
tmp = tempfile.mkdtemp()

GEN = r'''BEGIN {
	srand(seed); live = 0; next_id = 0; target = 10000
	print "config total=64G growth=1"
	for (i = 0; i < n; i++) {
		if (live == 0 || (live < 2 * target && rand() * 2 * target >= live)) {
			lg = lgmin + int(rand() * lgspan)
			size = int(2 ^ lg * (1 + rand()))
			if (rand() < afrac)
				printf "alloc b%d %d %d\n", next_id, size, 2 ^ (9 + int(rand() * 8))
			else
				printf "alloc b%d %d\n", next_id, size
			ids[live++] = next_id++
		} else {
			j = int(rand() * live)
			printf "free b%d\n", ids[j]
			ids[j] = ids[--live]
		}
	}
}'''


def gen(name, lgmin, lgspan, afrac):
    with open(os.path.join(tmp, name), "w") as f:
        subprocess.run(["awk", "-v", f"n={ops}", "-v", "seed=42", "-v",
                        f"lgmin={lgmin}", "-v", f"lgspan={lgspan}", "-v",
                        f"afrac={afrac}", GEN], stdout=f, check=True)


gen("tensors.ops", 8, 15, 0.125)
gen("small.ops", 4, 9, 0)
with open(os.path.join(tmp, "malloc.csv"), "w") as f:
    subprocess.run([sys.executable, os.path.join(here, "place_gen.py"),
                    "malloc", str(ops // 5), str(max(ops // 500, 10))],
                   stdout=f, check=True)
subprocess.run([os.path.join(A, "tests", "bench_foundation"), "gen",
                str(ops), os.path.join(tmp, "found.csv")], check=True,
               capture_output=True)


def cpu_ms(args):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(args, capture_output=True, check=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)) * 1e3


def replay(spec, trace):
    return lambda b: cpu_ms([os.path.join(b, "allocscope"), "replay",
                             os.path.join(tmp, trace), "-s", spec, "--json",
                             "/dev/null", "--no-progress"])


rows = [
    ("validate (bench_foundation validate)",
     lambda b: cpu_ms([os.path.join(b, "tests", "bench_foundation"),
                       "validate", os.path.join(tmp, "found.csv")])),
    ("bfc, tensors", replay("bfc", "tensors.ops")),
    ("bfc, small", replay("bfc", "small.ops")),
    ("tiered, small", replay("tiered", "small.ops")),
    ("npu-list, small", replay("npu-list", "small.ops")),
    ("cuda-caching, small", replay("cuda-caching", "small.ops")),
    ("sweep placer (strip:search=none,baselines=off), malloc",
     replay("strip:search=none,baselines=off", "malloc.csv")),
]
if os.path.exists(snap):
    rows.append(("snapshot read (replay -s recorded)",
                 lambda b: cpu_ms([os.path.join(b, "allocscope"), "replay",
                                   snap, "-s", "recorded", "--json",
                                   "/dev/null", "--no-progress"])))
rows = [r for r in rows if not sel or any(w in r[0] for w in sel)]
best = {}
for rep in range(reps):
    for name, f in rows:
        for b in ([A, B] if rep % 2 == 0 else [B, A]):
            best[(name, b)] = min(best.get((name, b), float("inf")), f(b))
print(f"ops={ops}, best of {reps}, CPU ms; load {os.getloadavg()}")
print("| workload | A ms | B ms | B/A |")
print("|---|---:|---:|---:|")
for name, _ in rows:
    a, b = best[(name, A)], best[(name, B)]
    print(f"| {name} | {a:.0f} | {b:.0f} | {b / a:.3f} |")
for f in os.listdir(tmp):
    os.unlink(os.path.join(tmp, f))
os.rmdir(tmp)
