# Style rules of the dense code reward (methods-extra §9, r_style) [PROPOSED]: a small
# flake8-like set, each finding tied to a line of the program. The program is only parsed
# (`ast`, `tokenize`), never executed. Part of the analyzer: `analyze.py` calls `style(...)`.
#
#   E501  line longer than `max_line` characters
#   E225  no whitespace around `=` at bracket depth 0, a comparison or an augmented assignment
#   E711  comparison to None with == / !=
#   E712  comparison to True / False with == / !=
#   E722  bare `except:`
#   F401  module-level import never used
#   F841  local variable assigned in a function and never read (plain `name = ...` only)

_SPACED = {"==", "!=", "<=", ">=", "<", ">", "+=", "-=", "*=", "/=", "//=", "%=", "**=",
           ">>=", "<<=", "&=", "|=", "^=", "@="}


def _operator_spacing(source, out):
    import io, tokenize
    depth = 0
    toks = [t for t in tokenize.generate_tokens(io.StringIO(source).readline)
            if t.type not in (tokenize.NL, tokenize.COMMENT)]
    for k, t in enumerate(toks):
        if t.type != tokenize.OP:
            continue
        if t.string in "([{":
            depth += 1
        elif t.string in ")]}":
            depth = max(0, depth - 1)
        elif t.string in _SPACED or (t.string == "=" and depth == 0):
            prev, nxt = toks[k - 1] if k else None, toks[k + 1] if k + 1 < len(toks) else None
            tight_before = prev is not None and prev.end == t.start
            tight_after = (nxt is not None and nxt.start == t.end
                           and nxt.type not in (tokenize.NEWLINE, tokenize.ENDMARKER))
            if tight_before or tight_after:
                out.append(("E225", t.start[0]))


def _function_locals(fn, out):
    import ast
    stores, loads, declared = {}, set(), set()
    nested = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)

    def walk(node, top):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Global, ast.Nonlocal)):
                declared.update(child.names)
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load):
                loads.add(child.id)
            if top and isinstance(child, ast.Assign):
                for target in child.targets:
                    if isinstance(target, ast.Name):
                        stores.setdefault(target.id, target.lineno)
            walk(child, top and not isinstance(child, nested))

    walk(fn, True)
    for name, line in stores.items():
        if name not in loads and name not in declared and name != "_":
            out.append(("F841", line))


def style(source, tree, max_line):
    import ast
    out = []
    for n, text in enumerate(source.split("\n"), 1):
        if len(text.rstrip("\r")) > max_line:
            out.append(("E501", n))
    try:
        _operator_spacing(source, out)
    except Exception:
        pass
    imported = {}
    used = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ExceptHandler) and node.type is None:
            out.append(("E722", node.lineno))
        elif isinstance(node, ast.Compare):
            for op, right in zip(node.ops, node.comparators):
                if isinstance(op, (ast.Eq, ast.NotEq)) and isinstance(right, ast.Constant):
                    if right.value is None:
                        out.append(("E711", node.lineno))
                    elif right.value is True or right.value is False:
                        out.append(("E712", node.lineno))
        elif isinstance(node, ast.Name):
            used.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            _function_locals(node, out)
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if isinstance(node, ast.ImportFrom) and node.module == "__future__":
                continue
            for alias in node.names:
                if alias.name == "*":
                    continue
                bound = alias.asname or alias.name.split(".")[0]
                imported.setdefault(bound, node.lineno)
    for name, line in imported.items():
        if name not in used:
            out.append(("F401", line))
    return out
