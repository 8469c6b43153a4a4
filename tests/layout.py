#!/usr/bin/env python3
"""The layout's rules, checked on the sources (TAP):
- no include circle between files;
- each folder of src/ includes only the folders before it in the pipeline
  (core <- formats, strategies <- compare, explain, render <- cli) and itself;
- cJSON only in src/formats/json/, cairo only in src/render/, SDL2 only in
  viewer/; the front ends see only the public headers;
- a run is passed down, never looked up: no _Thread_local anywhere, no
  threads in core/, and the placement code (strategies/place/) includes
  nothing of the strategy interface or the runner above it."""
import os, re, sys

root = sys.argv[1] if len(sys.argv) > 1 else "."
inc_re = re.compile(r'^\s*#\s*include\s+([<"])([^>"]+)[>"]', re.M)

# What each folder of src/ may include besides itself and the public API.
allowed = {
    "core": set(),
    "formats": {"core"},
    "strategies": {"core"},
    "compare": {"core"},
    "explain": {"core"},
    "render": {"core"},
    "cli": set(),
}
third_party = {"cjson/": "src/formats/json", "cairo": "src/render",
               "SDL": "viewer"}

files = {}
for top in ("src", "viewer"):
    for dp, _, names in os.walk(os.path.join(root, top)):
        for n in names:
            if n.endswith((".c", ".h")):
                p = os.path.relpath(os.path.join(dp, n), root)
                files[p] = open(os.path.join(root, p), encoding="utf-8").read()

def resolve(src, name):
    """The file a quoted include names: beside the includer, else under
    src/include or src."""
    for base in (os.path.dirname(src), "src/include", "src"):
        p = os.path.normpath(os.path.join(base, name))
        if p in files:
            return p
    return None

graph, problems = {}, []
for p, text in files.items():
    graph[p] = []
    for kind, name in inc_re.findall(text):
        for lib, home in third_party.items():
            if kind == "<" and name.startswith(lib) and not p.startswith(home):
                problems.append(f"{p} includes <{name}>: only {home}/ may")
        if kind != '"':
            continue
        q = resolve(p, name)
        if q is None:
            continue
        graph[p].append(q)
        if not p.startswith("src/") or q.startswith("src/include/"):
            if p.startswith("viewer/") and not (
                    q.startswith("src/include/") or q.startswith("viewer/")):
                problems.append(f"{p} includes the internal {q}")
            continue
        a, b = p.split("/")[1], q.split("/")[1]
        if a != b and b not in allowed.get(a, set()):
            problems.append(f"{p} ({a}) includes {q} ({b})")

# State is passed, never looked up.
for p, text in files.items():
    if re.search(r'\b_Thread_local\b|\b__thread\b', text):
        problems.append(f"{p} keeps per-thread state (_Thread_local)")
    if p.startswith("src/core/") and re.search(r'#\s*include\s*<pthread\.h>', text):
        problems.append(f"{p} includes <pthread.h>: core runs no threads")
    if p.startswith("src/strategies/place/"):
        for kind, name in inc_re.findall(text):
            if name in ("strategies/strategy.h",):
                problems.append(f"{p} includes {name}: the placement code "
                                "gets its budget as an argument")

# Circles: a depth-first search that meets a file still on its path.
state, circles = {}, []
def visit(p, path):
    state[p] = 1
    for q in graph[p]:
        if state.get(q) == 1:
            circles.append(" -> ".join(path[path.index(q):] + [q]))
        elif q not in state:
            visit(q, path + [q])
    state[p] = 2
for p in sorted(graph):
    if p not in state:
        visit(p, [p])

print("1..2")
for c in circles:
    print(f"#   include circle: {c}")
print(("not ok" if circles else "ok") + " 1 - no_file_includes_itself_through_others")
for m in problems:
    print(f"#   {m}")
print(("not ok" if problems else "ok") +
      " 2 - each_folder_includes_only_the_stages_before_it_and_third_party_headers_stay_home")
sys.exit(0)
