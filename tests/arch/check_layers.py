#!/usr/bin/env python3
"""The folders' dependency rules, checked against the code (issue 36).

docs/architecture.md's folder table says what each module may depend on; this reads that table and
every source file of every module, and fails on:
  - an `#include "gridrun/<folder>/..."` of a folder the table does not allow (an arrow that runs
    up or sideways), or a module folder missing from the table;
  - LibTorch headers outside runner/, MPI or NCCL headers outside runner/comm/;
  - a CMake module (gridrun_module) whose target_link_libraries names a gridrun:: module that the
    table does not allow;
  - an arrow back up inside a module (issue 46): its files are components by stem (X.hpp, X.cpp,
    src/X.hpp are component X); A depends on B when a file of A includes B's header
    ("gridrun/<m>/B.hpp" or a local "B.hpp"); any cycle of components is named with its members
    and one include line per edge;
  - a function in a module's .cpp longer than MAX_FUNCTION_LINES (docs/architecture.md, "Function
    size"), found by a brace scan of the definitions at the outer level (long_functions says what
    it cannot see);
  - docs/architecture.md's function-size figures (the paragraph "Largest functions now ...") when
    they differ from the code's (issue 59: figures in docs come from the code);
  - its walk of a job parameter (a paragraph "The walk of `P` ...": the files the value crosses
    from the grid file to the processes, parameter_walk) when it differs from the code's, or when
    a walk crosses more than MAX_WALK_FILES files.
Usage: check_layers.py SOURCE_DIR    (--self-test: first checks that each planted kind of violation
       is found; --figures: print the function-size paragraph the doc must hold, and nothing else;
       --walk PARAM: print the walk paragraph of PARAM, and nothing else)
"""
import pathlib
import re
import sys
import tempfile

# The longest function body a module's .cpp may hold, in lines (docs/architecture.md, "Function
# size", says the same number).
MAX_FUNCTION_LINES = 120
# The function-size figures of docs/architecture.md: how many are over this many lines, and the
# longest few by name.
LARGE_FUNCTION_LINES = 80
LARGEST_NAMED = 8
FIGURES_START = "Largest functions now"
# The most files a job parameter's walk from the grid file to the processes may cross (issue 59).
MAX_WALK_FILES = 10


def check(root):
    """The problems found in the tree at `root`, one line each."""
    doc = (root / "docs/architecture.md").read_text()
    allowed = {}
    for line in doc.splitlines():
        m = re.match(r"\| `([a-z][a-z0-9]*)/` \|.*\| ([^|]*) \|$", line)
        if m:
            deps = re.sub(r"\([^)]*\)", "", m.group(2))  # parentheses explain, they allow nothing
            allowed[m.group(1)] = {d.strip() for d in re.findall(r"\b([a-z][a-z0-9]*)\b", deps)}
    return check_tree(root, allowed)


MODULE_SUFFIXES = (".cpp", ".hpp", ".h", ".in", ".def")
INCLUDE = re.compile(r'#\s*include\s*[<"]([^">]+)[">]')


def module_files(root, m):
    """A module's source files (vendored code is not ours)."""
    return [f for f in sorted((root / m).rglob("*"))
            if f.suffix in MODULE_SUFFIXES and "vendor" not in f.parts and f.is_file()]


def component_cycles(root, m):
    """Back-arrows inside module `m`: its files grouped into components by stem (X.hpp and X.cpp
    are component X, wherever they lie in the folder); A depends on B when a file of A includes B's
    header ("gridrun/<m>/B.hpp" or a local "B.hpp"). Every strongly connected set of two or more
    components is a cycle; it is returned as (members, [one include line per edge inside it])."""
    files = [f for f in module_files(root, m) if f.suffix in (".cpp", ".hpp", ".h")]
    stems = {f.stem for f in files}
    edges = {}  # (a, b) -> "file:line: #include ..." (the first such line)
    for f in files:
        a = f.stem
        for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
            inc = INCLUDE.match(line.strip())
            if not inc or '"' not in line:  # <...> headers are never ours
                continue
            path = inc.group(1)
            g = re.fullmatch(r"gridrun/" + m + r"/([A-Za-z0-9_]+)\.(hpp|h)", path)
            local = re.fullmatch(r"([A-Za-z0-9_]+)\.(hpp|h)", path)
            b = g.group(1) if g else (local.group(1) if local else None)
            if b and b != a and b in stems:
                edges.setdefault((a, b), f"{f.relative_to(root)}:{n}: #include \"{path}\"")
    graph = {s: sorted(b for (a, b) in edges if a == s) for s in stems}
    cycles = []
    for scc in strongly_connected(graph):
        if len(scc) > 1:
            members = set(scc)
            lines = [edges[(a, b)] for (a, b) in sorted(edges) if a in members and b in members]
            cycles.append((sorted(scc), lines))
    return sorted(cycles)


def strongly_connected(graph):
    """Tarjan's algorithm, iterative (no recursion limit on a large module)."""
    index, low, on_stack, stack, out, counter = {}, {}, set(), [], [], [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(graph[w])))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                scc = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    scc.append(w)
                    if w == v:
                        break
                out.append(scc)
    return out


def blank_code(text):
    """`text` with comments, string and character literals replaced by spaces (newlines kept), so
    that braces inside them are not counted."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            delim = text[i + 2:text.find("(", i + 2)]
            j = text.find(")" + delim + '"', i)
            j = n if j < 0 else j + len(delim) + 2
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                out.append(" ")  # a digit separator: 1'000'000
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
        else:
            out.append(c)
            i += 1
            continue
        out.append(re.sub(r"[^\n]", " ", text[i:j]))
        i = j
    return "".join(out)


def matching_brace(code, i):
    """The offset of the brace closing the one at `i`."""
    d = 0
    for j in range(i, len(code)):
        if code[j] == "{":
            d += 1
        elif code[j] == "}":
            d -= 1
            if d == 0:
                return j
    return len(code)


def long_functions(path, limit):
    """Function bodies in one .cpp longer than `limit` lines, as (name, first line, lines)."""
    return [(d.name, d.first, d.last - d.first + 1) for d in definitions(path)
            if d.last - d.first + 1 > limit]


class Definition:
    """A function defined at a .cpp's outer level: its name, head (return type and parameters),
    first and last line, and the offsets of its body in the file's text."""

    def __init__(self, name, head, first, last, start, end):
        self.name, self.head, self.first, self.last, self.start, self.end = name, head, first, last, start, end


def definitions(path, into_classes=False):
    """The functions defined in one .cpp, as Definitions (with into_classes, also the methods
    defined inside class bodies).

    A simple brace scan: comments and literals are blanked, `namespace ... {` and `extern "C" {`
    are see-through, and every other block opened at the outer level is a definition; it is a
    function when the text before its `{` (since the last `;` or `}`) holds a `(` and is not a
    class, struct, union or enum head or an initializer (`= {`). Its length runs from the line of
    its name to the line of its closing brace. Limits: a method defined inside a class body is
    not measured on its own (the class is skipped; docs/architecture.md says classes stay small),
    lambdas count in the function that holds them, and a macro that opens or closes braces would
    confuse it (none does in our modules)."""
    code = blank_code(path.read_text(errors="replace"))
    found, depth, see_through, head_start, i = [], 0, [], 0, 0
    while i < len(code):
        c = code[i]
        if c == "{" and depth == len(see_through):
            head = code[head_start:i]
            head_clean = re.sub(r"#[^\n]*", "", head).strip()
            # `extern "C" {` reads `extern {` once its string is blanked
            if re.match(r"^(inline\s+)?namespace\b[^(]*$", head_clean) or head_clean == "extern":
                see_through.append(depth)
                depth += 1
                head_start = i + 1
                i += 1
                continue
            j = matching_brace(code, i)  # the block's end
            after = code[j + 1:].lstrip()[:1]
            if after in (",", "{") and re.search(r"\)[^(){}]*:(?!:)", head_clean):
                i = j + 1  # a brace initializer in a constructor's member list: the body follows
                continue
            is_type = re.search(r"\b(class|struct|union|enum)\b[^(]*$", head_clean)
            is_init = re.search(r"=\s*$", head_clean)
            if is_type and into_classes:
                see_through.append(depth)
                depth += 1
                head_start = i + 1
                i += 1
                continue
            if "(" in head_clean and not is_type and not is_init:
                name_line = code.count("\n", 0, head_start + len(head) - len(head.lstrip()))
                name = re.search(r"([~A-Za-z_][\w:~<>]*(operator\W+)?)\s*\([^()]*", head_clean)
                found.append(Definition(name.group(1) if name else head_clean[:40], head_clean, name_line + 1,
                                        code.count("\n", 0, j) + 1, i, j + 1))
            i = j + 1
            head_start = i
            continue
        if c == "}" and see_through and depth == see_through[-1] + 1:
            see_through.pop()
            depth -= 1
            head_start = i + 1
        elif c == ";" and depth == len(see_through):
            head_start = i + 1
        elif c == "\n" and depth == len(see_through) and code[head_start:i].strip().startswith("#"):
            head_start = i + 1  # a preprocessor line is not part of the next definition's head
        i += 1
    return found


def module_names(root):
    return sorted(p.parent.name for p in root.glob("*/CMakeLists.txt")
                  if p.parent.name not in ("tests", "bench", "cmake", "build", "examples", "docs"))


def function_figures(root):
    """The paragraph of docs/architecture.md's function-size figures, from every module's .cpp."""
    sizes = []  # (lines, name, module)
    for m in module_names(root):
        for f in module_files(root, m):
            if f.suffix == ".cpp":
                sizes.extend((n, name, m) for name, _, n in long_functions(f, 0))
    sizes.sort(key=lambda x: (-x[0], x[1], x[2]))
    over = sum(1 for n, _, _ in sizes if n > LARGE_FUNCTION_LINES)
    named = ", ".join(f"`{name}` ({m}/) {n}" for n, name, m in sizes[:LARGEST_NAMED])
    return (f"{FIGURES_START}, as `tests/arch/check_layers.py --figures` counts them ({over:,} functions "
            f"are over {LARGE_FUNCTION_LINES} lines): {named}.")


def figures_problems(root, doc):
    """The doc's function-size paragraph against the code's (compared with whitespace folded)."""
    paras = [" ".join(p.split()) for p in re.split(r"\n\s*\n", doc) if p.strip().startswith(FIGURES_START)]
    if not paras:
        return []
    want = function_figures(root)
    if paras[0] == want:
        return []
    return [f"docs/architecture.md: the function-size figures differ from the code; it should read "
            f"(tests/arch/check_layers.py --figures):\n    {want}"]


WALK_START = "The walk of"
# What hands a value to processes: a launcher's process-count option (a string literal of its own),
# the standard output of a command the Slurm task body hands to its launcher, or a check of the MPI
# world the processes were started with.
LAUNCH_OPTION = re.compile(r'"(-np|--ntasks|--ntasks-per-node)=?"')
NUMBER_TYPE = r"(?:std::)?(?:u?int\d*_t|int|long|size_t|double)"


def statement_at(code, i):
    """The offsets of the statement around offset `i` (from the last `;`, `{` or `}` to the next `;`)."""
    start = max(code.rfind(c, 0, i) for c in ";{}") + 1
    end = code.find(";", i)
    return start, len(code) if end < 0 else end


def parameter_walk(root, param):
    """Where a job parameter's value goes from the grid file to the processes, as the types carry it.

    The schema is the .def file with a row for `param`; the struct that includes it (JobParams) is
    the first carrier, and every struct with a number member named `param`, or a member of a carrier
    type, is a carrier too. A function (of a module's .cpp) is on the walk when it uses a carrier
    (names its type, or calls a function that returns one) and reads the member; it passes the value
    on when its return type is a carrier, and hands it to processes when a statement reading it holds
    a launcher's process-count option (LAUNCH_OPTION), writes it to std::cout (a command whose output
    the Slurm task body gives its launcher) or compares it with the MPI world (`world...`). The walk
    keeps the functions that hand it to processes and, back from them, those that return a carrier
    they use. Returns the hops as (file, [(function, what it gives)]) in the order the value reaches
    them, the schema first. Text is never a carrier: a value printed and parsed back would end the
    walk at the printing."""
    files = [f for m in module_names(root) for f in module_files(root, m)]
    raw = {f: f.read_text(errors="replace") for f in files}
    code = {f: blank_code(raw[f]) for f in files}
    schema = [f for f in files if f.suffix == ".def" and re.search(r"\w+\(\s*" + param + r"\s*,", code[f])]

    def includes_schema(text):  # an X-macro use: `#include "...<schema file>"`
        return any(re.search(r'#\s*include\s*"[^"]*' + re.escape(d.name) + '"', text) for d in schema)

    members, seed = {}, set()  # carrier candidates: struct name -> its body (blanked)
    for f in files:
        for m in re.finditer(r"\b(?:struct|class)\s+(\w+)\b[^;{}()]*\{", code[f]):
            body_end = matching_brace(code[f], m.end() - 1)
            members[m.group(1)] = members.get(m.group(1), "") + code[f][m.end():body_end]
            if includes_schema(raw[f][m.end():body_end]):
                seed.add(m.group(1))
    own = re.compile(r"\b" + NUMBER_TYPE + r"\s+(?:\w+\s*(?:=\s*[^,;{}]+|\{[^}]*\})?\s*,\s*)*" + param + r"\b\s*[=;,{]")
    carriers = seed | {n for n, body in members.items() if own.search(body)}
    contains = {}
    while True:
        grown = False
        for n, body in members.items():
            inner = {c for c in carriers if c != n and re.search(
                r"\b" + c + r"\b[^;(){}]*\s\w+\s*[;={]", body)}
            if inner and n not in carriers:
                carriers.add(n)
                grown = True
            contains[n] = inner
        if not grown:
            break

    def closure(types):
        out, pending = set(), list(types)
        while pending:
            t = pending.pop()
            if t not in out:
                out.add(t)
                pending.extend(contains.get(t, ()))
        return out

    read = re.compile(r"(?:\.|->)" + param + r"\b(?!\s*=[^=])")
    carrier_word = re.compile(r"\b(" + "|".join(sorted(carriers)) + r")\b")
    # (file, first line) -> (definition, carriers it names, carriers it passes the value on in,
    # what it hands to processes ("" for nothing), body): the functions that read the member.
    funcs = {}
    for f in files:
        if f.suffix != ".cpp":
            continue
        c = code[f]
        for d in definitions(f, into_classes=True):
            body = c[d.start:d.end]
            reads = [d.start + m.start() for m in read.finditer(body)]
            if not reads:
                continue
            name_at = d.head.rfind(d.name.split("::")[-1] + "(")
            returns = set(carrier_word.findall(d.head[:name_at])) if name_at > 0 else set()
            passes, sinks = False, []
            for at in reads:
                a, b = statement_at(c, at)
                st = c[a:b].strip()
                if re.match(r"(return\b|\w+(\.\w+)+\s*=[^=])", st):
                    passes = True
                option = LAUNCH_OPTION.search(raw[f][a:b])
                if option:
                    sinks.append(f"`{option.group(1)}`")
                elif "std::cout" in st:
                    sinks.append("standard output, for the Slurm task body's launcher")
                elif re.search(r"(==|!=)\s*\w*world\w*\b|\bworld\w*\s*(==|!=)", st):
                    sinks.append("checked against the MPI world")
            sink = "processes: " + ", ".join(dict.fromkeys(sinks)) if sinks else ""
            funcs[(f, d.first)] = (d, set(carrier_word.findall(d.head + body)), returns if passes else set(),
                                   sink, body)
    producers = {d.name.split("::")[-1]: r for d, _, r, _, _ in funcs.values() if r}
    call = re.compile(r"\b(" + "|".join(sorted(producers)) + r")\s*\(") if producers else None
    uses = {}
    for k, (d, named, _, _, body) in funcs.items():
        called = {t for p in (call.findall(body) if call else ()) for t in producers[p]}
        uses[k] = closure(named | called)
    reached, depth, level = set(seed), {}, 0
    while True:  # forward: what each carrier reaches, level by level
        level += 1
        new = {k for k in funcs if k not in depth and uses[k] & reached}
        if not new:
            break
        for k in new:
            depth[k] = level
            reached |= funcs[k][2]
    kept = {k for k in depth if funcs[k][3]}
    needed = set().union(*(uses[k] for k in kept)) if kept else set()
    while True:  # backward: who gives what those handing it to processes use
        more = {k for k in depth if k not in kept and funcs[k][2] & needed}
        if not more:
            break
        kept |= more
        for k in more:
            needed |= uses[k]
    hops = {}
    for k in kept:
        d, _, returns, sink, _ = funcs[k]
        hops.setdefault(k[0], []).append((depth[k], d.name, sink or ", ".join(sorted(returns))))
    order = sorted(hops, key=lambda f: (min(h[0] for h in hops[f]), str(f)))
    out = [(f.relative_to(root), [("", "the schema: " + ", ".join(sorted(seed)))]) for f in schema]
    # The schema's X-macro users: where the grid's values and a job file's fields become the struct.
    out += [(f.relative_to(root), [("", "the schema's rows, included")]) for f in files
            if f not in schema and includes_schema(raw[f])]
    return out + [(f.relative_to(root), [(n, g) for _, n, g in sorted(hops[f])]) for f in order]


def walk_text(param, hops):
    """The paragraph of docs/architecture.md that quotes parameter_walk's `hops` of `param`."""
    parts = []
    for f, fs in hops:
        what = "; ".join(f"`{n}` -> {g}" if n else g for n, g in fs)
        parts.append(f"`{f}` ({what})")
    return (f"{WALK_START} `{param}`, as `tests/arch/check_layers.py --walk {param}` finds it ({len(hops)} "
            f"files): " + "; ".join(parts) + ".")


def walk_problems(root, doc):
    """Each walk docs/architecture.md quotes against the code's, and none longer than MAX_WALK_FILES."""
    problems = []
    for para in (" ".join(p.split()) for p in re.split(r"\n\s*\n", doc) if p.strip().startswith(WALK_START)):
        param = re.match(WALK_START + r" `(\w+)`", para)
        if not param:
            continue
        hops = parameter_walk(root, param.group(1))
        want = walk_text(param.group(1), hops)
        if para != want:
            problems.append(f"docs/architecture.md: the walk of `{param.group(1)}` differs from the code; it should "
                            f"read (tests/arch/check_layers.py --walk {param.group(1)}):\n    {want}")
        files = len(hops)
        if files > MAX_WALK_FILES:
            problems.append(f"the walk of `{param.group(1)}` crosses {files} files (at most {MAX_WALK_FILES}: a value "
                            "that every layer restates is one no layer owns)")
    return problems


def check_tree(root, allowed):
    modules = module_names(root)
    doc = (root / "docs/architecture.md").read_text()
    problems = figures_problems(root, doc) + walk_problems(root, doc)
    for m in modules:
        if m not in allowed:
            problems.append(f"docs/architecture.md: folder {m}/ is missing from the folder table")
    for m in modules:
        may = allowed.get(m, set()) | {m}
        for f in module_files(root, m):
            rel = f.relative_to(root)
            for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
                inc = INCLUDE.match(line.strip())
                if not inc:
                    continue
                path = inc.group(1)
                g = re.match(r"gridrun/([a-z][a-z0-9]*)/", path)
                if g and g.group(1) not in may:
                    problems.append(f"{rel}:{n}: includes {path}, but {m}/ may not depend on {g.group(1)}/")
                if re.match(r"(torch|ATen|c10|caffe2)/", path) and m != "runner":
                    problems.append(f"{rel}:{n}: LibTorch header {path} outside runner/")
                if re.match(r"(mpi|nccl)\.h$", path) and rel.parts[:2] != ("runner", "comm"):
                    problems.append(f"{rel}:{n}: MPI/NCCL header {path} outside runner/comm/")
        cmake = (root / m / "CMakeLists.txt").read_text()
        for link in re.findall(r"target_link_libraries\(gridrun_" + m + r"\b([^)]*)\)", cmake):
            for dep in re.findall(r"gridrun::([a-z0-9_]+)", link):
                if dep not in may and dep != "cxx_runtime_first":
                    problems.append(f"{m}/CMakeLists.txt: gridrun_{m} links gridrun::{dep}, not allowed by the table")
        for members, lines in component_cycles(root, m):
            problems.append(f"{m}/: a cycle of components {{{', '.join(members)}}} (an arrow back up inside "
                            "the module; split a header or move a declaration to where it is defined):")
            problems.extend("    " + line for line in lines)
        for f in module_files(root, m):
            if f.suffix == ".cpp":
                for name, first, n in long_functions(f, MAX_FUNCTION_LINES):
                    problems.append(f"{f.relative_to(root)}:{first}: {name} is {n} lines "
                                    f"(at most {MAX_FUNCTION_LINES}: split it into named steps)")
    return problems


def self_test():
    """Each kind of violation, planted, must be found, and nothing else: an upward include and a
    LibTorch header outside runner/, a cycle of two components inside a module, and a function one
    line over the limit (one exactly at it, a long class body, a long initializer and braces inside
    strings and comments are not functions over the limit)."""
    with tempfile.TemporaryDirectory() as t:
        r = pathlib.Path(t)
        (r / "docs").mkdir()
        (r / "docs/architecture.md").write_text(
            "| `base/` | x | nlohmann-json |\n| `jobs/` | y | base (not jobs) |\n\n"
            "Largest functions now, as the check counts them (1 of 2 are over 80 lines): `f` 90.\n")
        for m in ("base", "jobs"):
            (r / m / "src").mkdir(parents=True)
            (r / m / "include/gridrun" / m).mkdir(parents=True)
            (r / m / "CMakeLists.txt").write_text(f"target_link_libraries(gridrun_{m} PUBLIC gridrun::base)\n")
        (r / "base/src/a.cpp").write_text('#include "gridrun/jobs/job.hpp"\n#include <torch/torch.h>\n')
        (r / "jobs/src/b.cpp").write_text('#include "gridrun/base/json.hpp"\n')
        # jobs: grid.cpp -> spec.hpp -> gridrun/jobs/grid.hpp is a cycle {grid, spec}; job -> grid is not
        (r / "jobs/include/gridrun/jobs/grid.hpp").write_text("#pragma once\n")
        (r / "jobs/src/grid.cpp").write_text('#include "gridrun/jobs/grid.hpp"\n#include "spec.hpp"\n')
        (r / "jobs/src/spec.hpp").write_text('#pragma once\n#include "gridrun/jobs/grid.hpp"\n')
        (r / "jobs/src/job.cpp").write_text('#include "gridrun/jobs/grid.hpp"\n')

        def body(n):  # a definition of exactly n lines, braces in a string and a comment inside
            return ["  const char* s = \"{{\";  // }"] * (n - 2)

        over = ["namespace gridrun::jobs {", "namespace {", "int at_limit(int a) {"] + body(MAX_FUNCTION_LINES) + [
            "}", "}  // namespace", "struct Big {"] + ["  int f() { return 1; }"] * 200 + [
            "};", "const int kTable[] = {"] + ["  1,"] * 200 + ["};",
            "Big::Big(int a)", "    : x_{a},", "      y_(a) {"] + body(MAX_FUNCTION_LINES - 2) + ["}",
            "int over_limit(int a) {"] + body(MAX_FUNCTION_LINES + 1) + ["}", "}  // namespace gridrun::jobs"]
        (r / "jobs/src/long.cpp").write_text("\n".join(over) + "\n")
        # A parameter's walk: the schema, a struct that includes it, a conversion, a launcher's
        # option, a world check; a reader that only reports and a printed label are not on it.
        (r / "jobs/include/gridrun/jobs/p.def").write_text("ROW(ranks, int, 1)\nROW(seed, int, 0)\n")
        (r / "jobs/include/gridrun/jobs/params.hpp").write_text(
            'struct Params {\n#define ROW(n, t, d) t n = d;\n#include "gridrun/jobs/p.def"\n};\n'
            "struct Shape { int ranks = 1; };\nstruct Spec { Shape shape; };\n")
        (r / "jobs/src/shape.cpp").write_text(
            "Shape shape_of(const Params& p) {\n  Shape s;\n  s.ranks = p.ranks;\n  return s;\n}\n"
            "double per_rank(const Params& p, double x) { return x / p.ranks; }\n"
            'std::string label(const Shape& s) { return "r" + std::to_string(s.ranks); }\n')
        (r / "jobs/src/launch.cpp").write_text(
            'class Mpi {\n public:\n  Argv argv(const Spec& s) const {\n    return {"mpirun", "-np", '
            "std::to_string(s.shape.ranks)};\n  }\n};\nvoid check(const Params& p, int world_size) {\n"
            '  if (p.ranks != world_size) throw Bad("ranks");\n}\n')
        doc = (r / "docs/architecture.md").read_text()
        (r / "docs/architecture.md").write_text(doc + "\nThe walk of `ranks`, as the check finds it (1 files).\n")
        found = check(r)
        want = ["base/src/a.cpp:1", "base/src/a.cpp:2", "{grid, spec}", "jobs/src/grid.cpp:2",
                "jobs/src/spec.hpp:2", "over_limit is 121 lines", "(3 functions are over 80 lines)",
                "the walk of `ranks` differs"]
        if len(found) != 8 or not all(any(w in f for f in found) for w in want):
            print("check_layers: self-test failed, found:", *found, sep="\n  ")
            sys.exit(1)
        walk = walk_text("ranks", parameter_walk(r, "ranks"))
        want = ["(4 files)", "`jobs/include/gridrun/jobs/p.def` (the schema: Params)", "`shape_of` -> Shape",
                "`argv` -> processes: `-np`", "`check` -> processes: checked against"]
        if not all(w in walk for w in want) or "per_rank" in walk or "label" in walk:
            print("check_layers: self-test failed: the walk of the planted `ranks` reads", walk)
            sys.exit(1)
        # The figures and the walk as the code gives them: no problem of theirs.
        (r / "docs/architecture.md").write_text(doc.split("Largest")[0] + function_figures(r) + "\n\n" + walk + "\n")
        if len(check(r)) != 6:
            print("check_layers: self-test failed: the code's own figures were called different:", *check(r),
                  sep="\n  ")
            sys.exit(1)

if "--self-test" in sys.argv:
    self_test()
    sys.argv.remove("--self-test")
if "--walk" in sys.argv:
    i = sys.argv.index("--walk")
    print(walk_text(sys.argv[i + 1], parameter_walk(pathlib.Path(sys.argv[i + 2] if len(sys.argv) > i + 2 else "."),
                                                    sys.argv[i + 1])))
    sys.exit(0)
if "--figures" in sys.argv:
    sys.argv.remove("--figures")
    print(function_figures(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")))
    sys.exit(0)
root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
problems = check(root)
for p in problems:
    print(p)
print(f"check_layers: {len(problems)} problem(s)")
sys.exit(1 if problems else 0)
