# The analyzer of the dense code reward (methods-extra §9): reads {"source", "max_line"} as JSON
# on stdin and writes one JSON object on stdout:
#   {"syntax": null | {"line": n, "error": name}, "findings": [[component, rule, line], ...]}
# The program is compiled (`compile`, which runs nothing) and parsed; it is never executed, so
# nothing it contains can write to this process's output. `style_rules.py` and
# `security_rules.py` are prepended to this file by the verifier.
def _analyze():
    import sys, json, ast, warnings
    warnings.simplefilter("ignore")
    job = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    source, max_line = job["source"], int(job["max_line"])
    result = {"syntax": None, "findings": []}
    try:
        compile(source, "<program>", "exec", dont_inherit=True)
        tree = ast.parse(source, "<program>")
    except SyntaxError as e:
        line = e.lineno if type(e.lineno) is int else 0
        result["syntax"] = {"line": line, "error": type(e).__name__}
    except (ValueError, RecursionError, MemoryError) as e:
        result["syntax"] = {"line": 0, "error": type(e).__name__}
    if result["syntax"] is None:
        found = [["style", r, n] for r, n in style(source, tree, max_line)]
        found += [["security", r, n] for r, n in security(tree)]
        found.sort(key=lambda f: (f[2], f[0], f[1]))
        result["findings"] = found[:500]
    sys.stdout.write(json.dumps(result) + "\n")


_analyze()
