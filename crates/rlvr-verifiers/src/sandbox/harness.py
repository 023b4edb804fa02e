# Test harness run by rlvr-verifiers inside the sandbox (python3 -c). It reads its job from stdin,
# runs the untrusted program, and reports each test on fd 3 as "<nonce> <index> <0|1> <name>".
# Everything it needs is captured before the program runs; an audit hook then blocks the ways a
# program could reach the harness (frames, gc, ctypes, /proc), the network, process creation,
# signals to other processes and writes outside the working directory.
def _main():
    import ast, builtins, collections, io, json, os, sys
    globals().pop("_main", None)
    spec = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdin = io.TextIOWrapper(io.BytesIO(b""))
    nonce = spec["nonce"]
    _write, _type, _len, _all, _str, _bool = os.write, type, len, all, str, bool
    _BaseException, _SystemExit, _exec, _compile = BaseException, SystemExit, exec, compile
    _StringIO, _getvalue = io.StringIO, io.StringIO.getvalue
    _realpath, _startswith, _isinstance, _int = os.path.realpath, str.startswith, isinstance, int
    _mro = type.__dict__["__mro__"].__get__
    _cdict = type.__dict__["__dict__"].__get__
    _items, _titer, _liter, _siter, _fiter = dict.items, tuple.__iter__, list.__iter__, set.__iter__, frozenset.__iter__
    _deque = collections.deque
    _diter = _deque.__iter__
    cwd = os.getcwd()
    _fsdecode, _PermissionError, _dict = os.fsdecode, PermissionError, dict
    _write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT

    def send(index, ok, name, message=""):
        clean = "".join(c for c in _str(name) if c.isalnum() or c in "_.:")[:60] or "-"
        msg = "".join(c if c.isprintable() else " " for c in _str(message))[:300]
        data = ("%s %d %d %s %s\n" % (nonce, index, 1 if ok else 0, clean, msg)).encode()
        while data:
            data = data[_write(3, data):]

    # Classes whose comparison and truth methods are trusted, as they were before the program ran.
    trusted = {}
    for cls in (int, float, complex, bool, str, bytes, _type(None), list, tuple, dict, set,
                frozenset, range, collections.Counter, collections.OrderedDict,
                collections.defaultdict, _deque, object):
        trusted[cls] = dict(_cdict(cls))
    names_eq = ("__eq__", "__ne__")
    names_truth = ("__bool__", "__len__")
    names_ord = ("__lt__", "__le__", "__gt__", "__ge__")

    def honest(t, names):
        for k in _mro(t):
            d = _cdict(k)
            snap = trusted.get(k)
            for n in names:
                if n in d and (snap is None or snap.get(n) is not d[n]):
                    return False
            if snap is not None and k is not object:
                return True
        return False

    def plain(x, names=names_eq, depth=0):
        t = _type(x)
        if depth > 100 or not honest(t, names):
            return False
        mro = _mro(t)
        if dict in mro:
            return _all(plain(k, names, depth + 1) and plain(v, names, depth + 1) for k, v in _items(x))
        for base, it in ((tuple, _titer), (list, _liter), (set, _siter), (frozenset, _fiter), (_deque, _diter)):
            if base in mro:
                return _all(plain(y, names, depth + 1) for y in it(x))
        return True

    def eq(a, b):
        pa, pb = plain(a), plain(b)
        if pa and pb:
            return a == b
        if pa != pb:
            return False
        return a == b

    def ne(a, b):
        pa, pb = plain(a), plain(b)
        if pa != pb:
            return False
        return a != b

    def order(op, a, b):
        if not (plain(a, names_ord) and plain(b, names_ord)):
            return False
        return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]

    def truth(v):
        return _bool(v) if plain(v, names_truth) else False

    class Rewrite(ast.NodeTransformer):
        ops = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}

        def visit_Compare(self, node):
            self.generic_visit(node)
            if _len(node.ops) != 1:
                return node
            op, left, right = node.ops[0], node.left, node.comparators[0]
            if _isinstance(op, ast.Eq):
                return ast.Call(ast.Name("__rlvr_eq__", ast.Load()), [left, right], [])
            if _isinstance(op, ast.NotEq):
                return ast.Call(ast.Name("__rlvr_ne__", ast.Load()), [left, right], [])
            sym = self.ops.get(_type(op))
            if sym:
                return ast.Call(ast.Name("__rlvr_order__", ast.Load()), [ast.Constant(sym), left, right], [])
            return node

        def visit_Assert(self, node):
            self.generic_visit(node)
            node.test = ast.Call(ast.Name("__rlvr_truth__", ast.Load()), [node.test], [])
            return node

    def compile_test(src, name):
        tree = ast.fix_missing_locations(Rewrite().visit(ast.parse(src)))
        return _compile(tree, name, "exec")

    # Compile everything trusted before the program can touch the ast module.
    tests = []
    for i, src in enumerate(spec.get("tests", [])):
        try:
            tests.append((i, compile_test(src, "<test %d>" % i)))
        except _BaseException as e:
            tests.append((i, e))
    check = spec.get("check")
    check_code = None
    if check is not None:
        try:
            check_code = compile_test(check, "<check>")
        except _BaseException as e:
            check_code = e
    program = spec["program"]
    setup = spec.get("setup") or ""
    io_cases = spec.get("io_cases", [])

    # Trusted stdlib functions that read their caller's module name through sys._getframe and
    # hand out no frame; any other caller of sys._getframe is refused.
    import enum, traceback, typing
    allowed_getframe = set()
    for owner, names in ((typing, ("_caller",)), (collections, ("namedtuple",)),
                         (traceback, ("print_stack", "format_stack", "extract_stack")),
                         (getattr(enum, "EnumType", None), ("_create_",))):
        for name in names:
            fn = getattr(owner, name, None)
            fn = getattr(fn, "__func__", fn)
            code = getattr(fn, "__code__", None)
            if code is not None:
                allowed_getframe.add(code)
    _getframe = sys._getframe
    in_hook = [False]

    blocked = {
        "sys._current_frames", "sys.settrace", "sys.setprofile",
        "sys.addaudithook", "gc.get_objects", "gc.get_referrers", "gc.get_referents",
        "os.kill", "os.killpg", "signal.pthread_kill", "os.fork", "os.forkpty", "os.system",
        "os.exec", "os.posix_spawn", "os.spawn", "subprocess.Popen", "pty.spawn",
        "socket.__new__", "socket.connect", "socket.bind", "socket.getaddrinfo",
        "ctypes.dlopen", "ctypes.dlsym", "ctypes.cdata", "ctypes.addressof", "mmap.__new__",
        "os.putenv", "os.unsetenv", "os.chroot", "os.setuid",
    }
    frame_attrs = {"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back", "f_locals",
                   "f_globals"}
    path_events = {"os.remove", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.symlink",
                   "os.link", "os.truncate", "os.utime", "os.rename", "shutil.rmtree",
                   "shutil.copyfile", "shutil.move"}
    armed = [False]
    root = cwd + "/"

    def inside(path):
        try:
            if _isinstance(path, _int):
                return True
            p = _realpath(_fsdecode(path))
        except _BaseException:
            return False
        return p == cwd or _startswith(p, root)

    def hook(event, args):
        if not armed[0]:
            return
        if event in blocked:
            raise _PermissionError("sandbox: %s is not allowed" % event)
        if event == "sys._getframe":
            if in_hook[0]:
                return
            in_hook[0] = True
            try:
                trusted_caller = _getframe(1).f_code in allowed_getframe
            finally:
                in_hook[0] = False
            if not trusted_caller:
                raise _PermissionError("sandbox: sys._getframe is not allowed")
            return
        if event == "object.__getattr__" or event == "object.__setattr__":
            if _len(args) > 1 and (args[1] in frame_attrs or (event == "object.__setattr__" and args[1] == "__code__")):
                raise _PermissionError("sandbox: %s is not allowed" % args[1])
            return
        if event == "open":
            path = args[0] if _len(args) > 0 else None
            mode = args[1] if _len(args) > 1 else None
            flags = args[2] if _len(args) > 2 else None
            if _isinstance(path, (str, bytes)):
                p = _fsdecode(path)
                if _startswith(p, "/proc") or _startswith(_realpath(p), "/proc"):
                    raise _PermissionError("sandbox: /proc is not readable")
                writing = False
                if _isinstance(mode, str):
                    for c in mode:
                        if c in "wax+":
                            writing = True
                if _isinstance(flags, _int) and flags & _write_flags:
                    writing = True
                if writing and not inside(path):
                    raise _PermissionError("sandbox: writes outside the working directory are not allowed")
            return
        if event in path_events:
            for a in args[:2]:
                if _isinstance(a, (str, bytes)) and not inside(a):
                    raise _PermissionError("sandbox: %s outside the working directory" % event)

    sys.addaudithook(hook)
    sys.stdout.flush()

    if io_cases:
        code = None
        try:
            code = _compile(program, "<program>", "exec")
        except _BaseException as e:
            send(0, False, "load:" + _type(e).__name__)
        for k, case in enumerate(io_cases):
            if code is None:
                send(k, False, "SyntaxError")
                continue
            out = _StringIO()
            saved = sys.stdin, sys.stdout
            sys.stdin, sys.stdout = _StringIO(case["input"]), out
            ok, name = True, "ok"
            armed[0] = True
            try:
                _exec(code, {"__name__": "__main__", "__builtins__": builtins})
            except _SystemExit as e:
                if e.code not in (None, 0):
                    ok, name = False, "exit"
            except _BaseException as e:
                ok, name = False, _type(e).__name__
            armed[0] = False
            sys.stdin, sys.stdout = saved
            if ok:
                got = [l.rstrip() for l in _getvalue(out).rstrip().split("\n")]
                want = [l.rstrip() for l in case["output"].rstrip().split("\n")]
                ok = got == want
                name = "ok" if ok else "wrong_output"
            send(k, ok, name)
        _write(3, ("%s done 1 -\n" % nonce).encode())
        return

    ns = {"__name__": "solution", "__builtins__": builtins}
    armed[0] = True
    try:
        _exec(_compile(program, "<program>", "exec"), ns)
        if setup:
            _exec(_compile(setup, "<setup>", "exec"), ns)
        loaded = None
    except _BaseException as e:
        loaded = _type(e).__name__
        try:
            load_message = _str(e)
        except _BaseException:
            load_message = ""
    armed[0] = False
    if loaded is not None:
        send(-1, False, "load:" + loaded, load_message)
    test_ns = _dict(ns)
    test_ns.update({"__rlvr_eq__": eq, "__rlvr_ne__": ne, "__rlvr_order__": order,
                    "__rlvr_truth__": truth})
    n = _len(tests)
    for i, code in tests:
        if loaded is not None:
            send(i, False, "not_loaded")
            continue
        if _isinstance(code, _BaseException):
            send(i, False, "bad_test:" + _type(code).__name__)
            continue
        armed[0] = True
        try:
            _exec(code, test_ns)
            ok, name = True, "ok"
        except _BaseException as e:
            ok, name = False, _type(e).__name__
        armed[0] = False
        send(i, ok, name)
    if check is not None:
        if loaded is not None or _isinstance(check_code, _BaseException):
            send(n, False, "not_loaded" if loaded else "bad_check")
        else:
            entry = spec["entry_point"]
            armed[0] = True
            try:
                _exec(check_code, test_ns)
                fn = ns[entry]
                test_ns["check"](fn)
                ok, name = True, "ok"
            except _BaseException as e:
                ok, name = False, _type(e).__name__
            armed[0] = False
            send(n, ok, name)
    _write(3, ("%s done 1 -\n" % nonce).encode())


_main()
