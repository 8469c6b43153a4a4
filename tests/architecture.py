#!/usr/bin/env python3
"""docs/architecture.md against the tree (TAP):
- every source file under src/ and viewer/ is named in the table of folders
  and files, in the row of its own folder;
- every file the table names exists;
- every library function a row names (`as_...`) is defined in, or for a
  header row declared in, one of the files of that row.

How the table is read: a row whose first cell is a top folder (`src/core/`,
`viewer/`) sets the folder for the rows after it; a first cell that names a
subfolder (`place/`) or a top folder lists its files in the second cell;
otherwise the first cell's names are the row's files, in the current
folder. `{a,b}.h` names a.h and b.h."""
import os, re, sys

root = sys.argv[1] if len(sys.argv) > 1 else "."
doc = open(os.path.join(root, "docs/architecture.md"), encoding="utf-8").read()

tick_re = re.compile(r"`([^`]+)`")
src_ext = (".c", ".h")


def expand(tok):
    """`{a,b}.h` -> a.h, b.h; anything else as is."""
    m = re.match(r"^(.*)\{([^}]*)\}(.*)$", tok)
    if not m:
        return [tok]
    return [m.group(1) + part + m.group(3) for part in m.group(2).split(",")]


def names(cell):
    out = []
    for tok in tick_re.findall(cell):
        out.extend(expand(tok.strip()))
    return out


def is_file(tok):
    return tok.endswith(src_ext) and " " not in tok


def is_top(tok):
    return tok.endswith("/") and tok.split("/")[0] in ("src", "viewer", "tests")


on_disk = set()
for top in ("src", "viewer"):
    for dp, _, ns in os.walk(os.path.join(root, top)):
        for n in ns:
            if n.endswith(src_ext):
                on_disk.add(os.path.relpath(os.path.join(dp, n), root))

texts = {p: open(os.path.join(root, p), encoding="utf-8").read() for p in on_disk}
def_re = lambda fn: re.compile(r"^[A-Za-z_][^;{}()]*\b" + re.escape(fn) + r"\(", re.M)
defined_in = {}


def where_defined(fn):
    """The .c files that define fn (a line starting with its type)."""
    if fn not in defined_in:
        r = def_re(fn)
        defined_in[fn] = {p for p, t in texts.items()
                          if p.endswith(".c") and any(
                              t[m.end():].lstrip().find("{") >= 0 and
                              re.match(r"[^;]*\)\s*\{", t[m.end():], re.S)
                              for m in r.finditer(t))}
    return defined_in[fn]


def check(doc):
    """(ok, what) per finding for this text of the doc."""
    # The table: lines starting with '|' after the "Folders and files" heading.
    section = doc.split("## Folders and files", 1)
    if len(section) < 2:
        return [(False, "docs/architecture.md has a folders and files table")], set()
    rows = []
    for line in section[1].splitlines():
        if line.startswith("## "):
            break
        if line.startswith("|") and not re.match(r"^\|\s*-", line):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) >= 2 and cells[0] != "path":
                rows.append(cells)

    folder = ""
    row_files = []  # (set of paths, role text)
    for first, role in ((r[0], " | ".join(r[1:])) for r in rows):
        first_names = names(first)
        files = set()
        listed_in_role = None
        for tok in first_names:
            if is_top(tok):
                folder = tok.rstrip("/")
                listed_in_role = folder
            elif tok.endswith("/"):
                listed_in_role = os.path.join(folder, tok.rstrip("/"))
            elif is_file(tok):
                files.add(tok if "/" in tok and tok.split("/")[0] in ("src", "viewer")
                          else os.path.join(folder, tok))
        if listed_in_role is not None:
            for tok in names(role):
                if is_file(tok) and "/" not in tok:  # a path is a reference
                    files.add(os.path.join(listed_in_role, tok))
        row_files.append((files, role))

    named = set().union(*(f for f, _ in row_files))
    checks = []
    for p in sorted(on_disk - named):
        checks.append((False, f"{p} is named in docs/architecture.md's table"))
    for p in sorted(p for p in named - on_disk
                    if not os.path.exists(os.path.join(root, p))):
        checks.append((False, f"{p}, named in docs/architecture.md's table, exists"))
    for files, role in row_files:
        # `as_f` (dir/file.c) names a function of another file, used here.
        for fn, at in sorted(set(re.findall(r"`(as_[a-z0-9_]+)`(?:\s*\(([\w/]+\.c)\))?", role))):
            where = where_defined(fn)
            if not where:
                continue  # a type, a macro or a field, not a function
            if at:
                ok = any(w.endswith("/" + at) for w in where)
                checks.append((ok, f"{fn} is defined in {at}, as the table says "
                                   f"(defined in {', '.join(sorted(where))})"))
                continue
            headers = {f for f in files if f.endswith(".h")}
            declared = any(re.search(r"\b" + re.escape(fn) + r"\(", texts.get(h, ""))
                           for h in headers)
            ok = bool(where & files) or declared
            checks.append((ok, f"{fn} lives where the table says "
                               f"({', '.join(sorted(files)) or 'no file'}; "
                               f"defined in {', '.join(sorted(where))})"))
    return checks, named


checks, named = check(doc)
if all(ok for ok, _ in checks):
    checks = [(True, f"{len(named)} files named, {len(checks)} functions where the table says")]
# The check itself must fail when a file goes missing from the table.
gone = doc.replace("`curve.c`", "`curve`", 1)
checks.append((not all(ok for ok, _ in check(gone)[0]),
               "a file removed from the table fails the check"))

print(f"1..{len(checks)}")
for i, (ok, what) in enumerate(checks, 1):
    print(f"{'ok' if ok else 'not ok'} {i} - {what}")
sys.exit(0 if all(ok for ok, _ in checks) else 1)
