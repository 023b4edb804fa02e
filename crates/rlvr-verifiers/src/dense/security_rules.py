# Security rules of the dense code reward (methods-extra §9, r_sec) [PROPOSED]: a small
# bandit-like set, each finding tied to a line of the program. The program is only parsed,
# never executed. Part of the analyzer: `analyze.py` calls `security(...)`.
#
#   B307  eval(...) / exec(...)
#   B605  os.system / os.popen / os.exec* / os.spawn* calls
#   B602  subprocess.*(..., shell=True)
#   B301  pickle / marshal / dill / cPickle .load(s)
#   B105  a hard-coded secret: a name containing password, passwd, secret, token or api_key
#         assigned a non-empty string or bytes literal, or an integer literal
#   B403  __import__(...)

_SECRET_WORDS = ("password", "passwd", "secret", "token", "api_key", "apikey")


def _secret_name(name):
    low = name.lower()
    return any(w in low for w in _SECRET_WORDS)


def _literal_secret(value):
    import ast
    if not isinstance(value, ast.Constant):
        return False
    v = value.value
    if isinstance(v, (str, bytes)):
        return len(v) > 0
    return type(v) is int


def security(tree):
    import ast
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id in ("eval", "exec"):
                out.append(("B307", node.lineno))
            elif isinstance(f, ast.Name) and f.id == "__import__":
                out.append(("B403", node.lineno))
            elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
                mod, attr = f.value.id, f.attr
                if mod == "os" and (attr in ("system", "popen") or attr.startswith(("exec", "spawn"))):
                    out.append(("B605", node.lineno))
                elif mod == "subprocess" and any(
                        k.arg == "shell" and isinstance(k.value, ast.Constant) and k.value.value is True
                        for k in node.keywords):
                    out.append(("B602", node.lineno))
                elif mod in ("pickle", "cPickle", "marshal", "dill") and attr in ("load", "loads"):
                    out.append(("B301", node.lineno))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if node.value is None or not _literal_secret(node.value):
                continue
            for t in targets:
                name = t.id if isinstance(t, ast.Name) else t.attr if isinstance(t, ast.Attribute) else None
                if name is not None and _secret_name(name):
                    out.append(("B105", node.lineno))
    return out
