# Remote harness of rlvr-verifiers' `sandbox_fusion` code backend. It is sent as the `code` of a
# SandboxFusion `POST /run_code` request; its job arrives on stdin as one JSON object:
# {"nonce", "program", "setup", "tests", "check", "entry_point", "io_cases"}.
#
# Unlike the local sandbox (two processes, the tests never in the program's process), a remote
# `/run_code` is one interpreter, so the program and the tests share it. What keeps a verdict from
# being forged there:
# - The nonce never appears in the request's code (it comes on stdin, which is then replaced by
#   /dev/null) and lives only in this function's locals. Reports go to a private duplicate of
#   fd 1 as "\n<nonce> test <i> <0|1> <name> <msg>" and finally "\n<nonce> done"; fd 1 itself is
#   pointed at /dev/null before the program runs, so its prints never reach the reply.
# - Before any untrusted code runs, every test is parsed and compiled, with `==`, `<`, `in`...,
#   `assert` and calls rewritten into calls of functions held in this function's locals (passed
#   to each test as arguments): comparisons and truth tests accept only builtin values (int,
#   float, complex, str, bytes, bool, None and the builtin/collections containers of those), and
#   a call to the program's code must return such a value (arithmetic also takes instances of
#   classes that existed before the program, such as `Fraction`). An object with a forged
#   `__eq__`, `__bool__`, `__sub__` or `__float__`, or a subclass of `int`, never reaches a
#   comparison.
# - Each test runs in a copy of the program's namespace with the builtins captured before the
#   program existed, and every module loaded before the program (builtins, math, re, ...) and
#   every class written in Python in them (`Counter`...) is restored before every test and after
#   every call into the program, so patching `builtins.len`, `math.isclose` or `Counter.__eq__`
#   changes nothing; what restoring removes is kept alive, so no finalizer of the program runs.
#   Threads and the cyclic garbage collector are off while the program exists.
# - An audit hook, armed from the moment the program loads to the end, refuses frame access
#   (`sys._getframe`, `tb_frame`, `gi_frame`...), `gc` object walks, `ctypes`, tracing, new
#   audit hooks, process creation and `/proc`, which are the ways to reach this function's locals.
# - A test passes only when its function returns normally; SystemExit, KeyboardInterrupt and
#   every other exception fail it, and a test without a report failed. An early exit (os._exit,
#   a signal, killing the interpreter) leaves no "done" line, so the run scores 0.
# What this cannot rule out: a program that breaks CPython itself (memory corruption) could read
# the nonce; the remote sandbox's own isolation is the server's business.
def _rlvr_main():
    import sys, os, io, ast, json, builtins, operator
    import math, re, string, itertools, functools, collections, heapq, bisect, cmath, statistics
    import types, decimal, fractions, random, copy

    write, read, dup, dup2, close, osopen = os.write, os.read, os.dup, os.dup2, os.close, os.open
    b_exec, b_compile, b_type, b_len, b_bool, b_dict = exec, compile, type, len, bool, dict
    b_str, b_set, b_id = str, set, id
    BaseExc, AssertErr, SysExit = BaseException, AssertionError, SystemExit
    text_wrapper, bytes_io = io.TextIOWrapper, io.BytesIO
    if hasattr(sys, "set_int_max_str_digits"):
        sys.set_int_max_str_digits(0)

    data = b""
    while True:
        chunk = read(0, 1 << 20)
        if not chunk:
            break
        data += chunk
    job = json.loads(data.decode("utf-8"))
    del data
    nonce = job["nonce"]
    try:
        null_in = osopen(os.devnull, os.O_RDONLY)
        dup2(null_in, 0)
        close(null_in)
    except OSError:
        pass
    out = dup(1)
    try:
        null_out = osopen(os.devnull, os.O_WRONLY)
        dup2(null_out, 1)
        close(null_out)
    except OSError:
        pass

    def report(line):
        raw = ("\n%s %s\n" % (nonce, line)).encode("utf-8", "replace")
        while raw:
            try:
                raw = raw[write(out, raw):]
            except OSError:
                return

    def clean(text, n):
        try:
            s = text if b_type(text) is b_str else b_str(text)
        except BaseExc:
            s = "?"
        if b_type(s) is not b_str:
            s = "?"
        s = "".join(c if c.isprintable() and c != " " else "_" for c in s[:n])
        return s or "-"

    def exc_name(e):
        try:
            name = b_type(e).__name__
            return name if b_type(name) is b_str else "Exception"
        except BaseExc:
            return "Exception"

    # Values a comparison may see: exact builtin types, captured before the program exists.
    atoms = {int, float, complex, str, bytes, bool, b_type(None)}
    seqs = {list, tuple, set, frozenset, collections.deque}
    maps = {dict, collections.Counter, collections.OrderedDict, collections.defaultdict}
    builtin_types = {v for v in vars(builtins).values() if b_type(v) is type} | seqs | maps

    class NotBuiltin(Exception):
        pass

    def plain(v):
        stack, seen = [v], 0
        while stack:
            x = stack.pop()
            seen += 1
            if seen > 5000000:
                raise NotBuiltin("value too large to check")
            t = b_type(x)
            if t in atoms:
                continue
            if t in seqs:
                stack.extend(x)
                continue
            if t in maps:
                for k, w in dict.items(x):
                    stack.append(k)
                    stack.append(w)
                continue
            raise NotBuiltin("a %s is not a builtin value" % clean(t.__name__, 40))
        return v

    ops = {
        ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
        ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
        ast.In: lambda a, b: operator.contains(b, a),
        ast.NotIn: lambda a, b: not operator.contains(b, a),
    }
    op_names = {k.__name__: f for k, f in ops.items()}

    def h_cmp(left, names, rights):
        for name, right in zip(names, rights):
            f = op_names[name]
            if name not in ("Is", "IsNot"):
                plain(left)
                plain(right)
            r = f(left, right)
            if b_type(r) is not bool:
                raise NotBuiltin("comparison did not give a bool")
            if not r:
                return False
            left = right
        return True

    def h_truth(v):
        plain(v)
        return b_bool(v)

    def h_fail():
        raise AssertErr()

    def operand(r):
        """An arithmetic operand: a builtin value, or an instance of a class that existed before
        the program (such as `Fraction`), whose methods `restore` keeps original."""
        if b_id(b_type(r)) in trusted_types:
            return r
        return plain(r)

    def h_call(f, *a, **k):
        r = f(*a, **k)
        if b_id(f) in trusted_callables:
            # A builtin or a stdlib callable that existed before the program (`sorted`,
            # `math.isclose`, `random.Random`): its result is its own.
            return r
        # The program's code ran: undo what it patched, then accept only builtin values.
        restore()
        return plain(r)

    arith = {
        "Add": operator.add, "Sub": operator.sub, "Mult": operator.mul,
        "Div": operator.truediv, "FloorDiv": operator.floordiv, "Mod": operator.mod,
        "Pow": operator.pow, "MatMult": operator.matmul, "LShift": operator.lshift,
        "RShift": operator.rshift, "BitOr": operator.or_, "BitXor": operator.xor,
        "BitAnd": operator.and_, "USub": operator.neg, "UAdd": operator.pos,
        "Invert": operator.invert,
    }

    def h_arith(name, *operands):
        for x in operands:
            operand(x)
        return operand(arith[name](*operands))

    H = ("__rlvr_cmp", "__rlvr_truth", "__rlvr_fail", "__rlvr_call", "__rlvr_arith")

    class Rewrite(ast.NodeTransformer):
        def visit_Compare(self, node):
            self.generic_visit(node)
            return ast.Call(
                func=ast.Name(id=H[0], ctx=ast.Load()),
                args=[node.left,
                      ast.Tuple(elts=[ast.Constant(b_type(o).__name__) for o in node.ops],
                                ctx=ast.Load()),
                      ast.Tuple(elts=node.comparators, ctx=ast.Load())],
                keywords=[])

        def visit_Assert(self, node):
            self.generic_visit(node)
            test = ast.Call(func=ast.Name(id=H[1], ctx=ast.Load()), args=[node.test], keywords=[])
            fail = ast.Expr(ast.Call(func=ast.Name(id=H[2], ctx=ast.Load()), args=[], keywords=[]))
            return ast.If(test=ast.UnaryOp(op=ast.Not(), operand=test), body=[fail], orelse=[])

        def visit_BinOp(self, node):
            self.generic_visit(node)
            return ast.Call(func=ast.Name(id=H[4], ctx=ast.Load()),
                            args=[ast.Constant(b_type(node.op).__name__), node.left, node.right],
                            keywords=[])

        def visit_UnaryOp(self, node):
            self.generic_visit(node)
            if b_type(node.op) is ast.Not:
                return node
            return ast.Call(func=ast.Name(id=H[4], ctx=ast.Load()),
                            args=[ast.Constant(b_type(node.op).__name__), node.operand],
                            keywords=[])

        def visit_Call(self, node):
            self.generic_visit(node)
            return ast.Call(func=ast.Name(id=H[3], ctx=ast.Load()), args=[node.func] + node.args,
                            keywords=node.keywords)

    def build(src, label, returns):
        """A function `(cmp, truth, fail, call) -> returns` whose body is the rewritten `src`."""
        tree = ast.parse(src, "<%s>" % label, "exec")
        body = [Rewrite().visit(s) for s in tree.body]
        body.append(ast.Return(value=ast.Name(id=returns, ctx=ast.Load()) if returns
                               else ast.Constant(None)))
        fn = ast.FunctionDef(
            name="__rlvr_fn",
            args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=h) for h in H], vararg=None,
                               kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
            body=body, decorator_list=[], returns=None)
        if "type_params" in ast.FunctionDef._fields:
            fn.type_params = []
        mod = ast.fix_missing_locations(ast.Module(body=[fn], type_ignores=[]))
        code = b_compile(mod, "<%s>" % label, "exec")
        return [c for c in code.co_consts if b_type(c) is b_type(code)][0]

    def compile_all(items, label, returns=None):
        res = []
        for k, src in enumerate(items):
            try:
                res.append(build(src, "%s %d" % (label, k), returns))
            except BaseExc as e:
                res.append(e)
        return res

    tests = compile_all(job.get("tests") or [], "test")
    check = job.get("check")
    check_code = compile_all([check], "check", "check")[0] if check is not None else None
    io_cases = job.get("io_cases") or []
    setup = job.get("setup") or ""
    try:
        setup_code = b_compile(setup, "<setup>", "exec")
    except BaseExc as e:
        setup_code = e
    try:
        program = b_compile(job["program"], "<solution>", "exec")
    except BaseExc as e:
        program = e

    # No threads: the harness could not watch what they do between its checks.
    import _thread, threading

    def no_threads(*a, **k):
        raise RuntimeError("threads are refused")

    for mod, names in ((_thread, ("start_new_thread", "start_new", "start_joinable_thread")),
                       (threading, ("_start_new_thread", "_start_joinable_thread"))):
        for name in names:
            if hasattr(mod, name):
                setattr(mod, name, no_threads)

    clean_builtins = b_dict(vars(builtins))
    watched = {name: m for name, m in sys.modules.items() if b_type(m) is types.ModuleType}
    snapshots = {name: b_dict(vars(m)) for name, m in watched.items()}
    # Classes and callables that existed before the program (the snapshots keep them alive, so
    # their ids stay unique); the classes written in Python can be patched, so their
    # dictionaries are snapshotted and restored too.
    trusted_types = {b_id(v) for snap in snapshots.values() for v in snap.values()
                     if isinstance(v, type)}
    trusted_types.update(b_id(t) for t in builtin_types)
    trusted_types.difference_update(b_id(t) for t in (object, type))
    trusted_callables = {b_id(v) for snap in snapshots.values() for v in snap.values()
                         if callable(v)}
    heap_classes = {}
    for snap in snapshots.values():
        for v in snap.values():
            if isinstance(v, type) and v.__flags__ & (1 << 9):  # Py_TPFLAGS_HEAPTYPE
                heap_classes[b_id(v)] = (v, b_dict(vars(v)))
    graveyard = []  # what restore removed: kept alive so no finalizer of the program runs
    set_attr, del_attr = type.__setattr__, type.__delattr__

    def restore():
        for name, m in watched.items():
            if sys.modules.get(name) is not m:
                graveyard.append(sys.modules.get(name))
                sys.modules[name] = m
            d, snap = vars(m), snapshots[name]
            for key in [key for key in d if b_type(key) is not b_str or key not in snap]:
                graveyard.append(d.pop(key))
            for key, value in snap.items():
                if key not in d or d[key] is not value:
                    graveyard.append(d.get(key))
                    d[key] = value
        for cls, snap in heap_classes.values():
            d = vars(cls)
            if b_len(d) == b_len(snap) and all(d.get(k) is v for k, v in snap.items()):
                continue
            for key in [key for key in d if key not in snap]:
                graveyard.append(d[key])
                try:
                    del_attr(cls, key)
                except BaseExc:
                    pass
            for key, value in snap.items():
                if d.get(key) is not value:
                    graveyard.append(d.get(key))
                    try:
                        set_attr(cls, key, value)
                    except BaseExc:
                        pass

    armed = [False]
    refused = ("sys._getframe", "sys._current_frames", "sys._current_exceptions",
               "gc.get_objects", "gc.get_referrers", "gc.get_referents", "object.__getattr__",
               "sys.settrace", "sys.setprofile", "sys.addaudithook", "sys.monitoring",
               "ctypes", "os.system", "os.exec", "os.fork", "os.forkpty", "os.posix_spawn",
               "os.spawn", "subprocess.Popen", "pty.spawn", "os.kill", "os.killpg",
               "signal.pthread_kill", "cpython.", "_posixsubprocess")

    def hook(event, args):
        if not armed[0]:
            return
        if event == "sys._getframe":
            # ValueError is what the stdlib's optional callers (namedtuple, enum, typing) expect.
            raise ValueError("frame access is refused")
        if event.startswith(refused):
            raise RuntimeError("%s is refused" % event)
        if event == "import" and args and args[0] in ("ctypes", "_ctypes", "gc"):
            raise ImportError("%s is refused" % args[0])
        if event == "open" and args:
            p = args[0]
            if b_type(p) is bytes:
                p = p.decode("utf-8", "replace")
            if b_type(p) is b_str and (p.startswith("/proc") or p.startswith("/dev/fd")):
                raise PermissionError("%s is refused" % p)
            if b_type(p) is int:
                raise PermissionError("opening descriptors is refused")

    sys.addaudithook(hook)
    # No cyclic collection while the program exists (a finalizer could run mid-test), and no
    # `gc` module for it to import again (the import is refused).
    import gc
    gc.disable()
    del sys.modules["gc"], gc
    helpers = (h_cmp, h_truth, h_fail, h_call, h_arith)

    def run_test(k, code, ns, then=None):
        if isinstance(code, BaseExc):
            report("test %d 0 bad_test:%s -" % (k, clean(exc_name(code), 40)))
            return
        restore()
        t_ns = b_dict(ns)
        t_ns["__builtins__"] = b_dict(clean_builtins)
        # A name of a module loaded before the program means that module in the tests, unless
        # the program defined a function of that name.
        for name, m in watched.items():
            if name in t_ns and b_type(t_ns[name]) is not types.FunctionType:
                t_ns[name] = m
        fn = types.FunctionType(code, t_ns)
        try:
            value = fn(*helpers)
            if then is not None:
                then(value)
            ok, name, msg = 1, "ok", "-"
        except BaseExc as e:
            ok, name, msg = 0, clean(exc_name(e), 60), clean(e, 200)
        report("test %d %d %s %s" % (k, ok, name, msg))

    if io_cases:
        for k, case in enumerate(io_cases):
            if isinstance(program, BaseExc):
                report("test %d 0 load:%s -" % (k, clean(exc_name(program), 40)))
                continue
            restore()
            buf_in = text_wrapper(bytes_io(case["input"].encode("utf-8")), encoding="utf-8")
            raw_out = bytes_io()
            buf_out = text_wrapper(raw_out, encoding="utf-8")
            sys.stdin, sys.stdout = buf_in, buf_out
            ns = {"__name__": "__main__", "__builtins__": builtins}
            armed[0] = True
            try:
                b_exec(program, ns)
                name = None
            except SysExit as e:
                name = None if b_type(e.code) in (int, b_type(None)) and not e.code else "SystemExit"
            except BaseExc as e:
                name = clean(exc_name(e), 60)
            if name is not None:
                report("test %d 0 %s -" % (k, name))
                continue
            try:
                buf_out.flush()
                got = raw_out.getvalue().decode("utf-8", "replace")
            except BaseExc:
                got = ""
            a = [l.rstrip() for l in got.rstrip().split("\n")]
            b = [l.rstrip() for l in case["output"].rstrip().split("\n")]
            report("test %d %d %s -" % (k, int(a == b), "ok" if a == b else "wrong_output"))
        report("done")
        return

    n = b_len(tests) + (check is not None)
    ns = {"__name__": "solution", "__builtins__": builtins}
    armed[0] = True
    try:
        if isinstance(program, BaseExc):
            raise program
        b_exec(program, ns)
        failed = None
    except BaseExc as e:
        failed = clean(exc_name(e), 40)
    restore()
    if failed is not None:
        report("violation load:%s" % failed)
        return
    try:
        if isinstance(setup_code, BaseExc):
            raise setup_code
        b_exec(setup_code, ns)
        failed = None
    except BaseExc as e:
        failed = clean(exc_name(e), 40)
    if failed is not None:
        for k in range(n):
            report("test %d 0 setup:%s -" % (k, failed))
        report("done")
        return
    for k, code in enumerate(tests):
        run_test(k, code, ns)
    if check_code is not None:
        entry = job.get("entry_point") or ""

        def call_check(check_fn):
            if entry not in ns:
                raise NameError(entry)
            target = ns[entry]

            def candidate(*a, **kw):
                return h_call(target, *a, **kw)

            check_fn(candidate)

        run_test(b_len(tests), check_code, ns, call_check)
    report("done")


_rlvr_main()
