# Candidate-side runner of rlvr-verifiers, run as `python3 -I -S -c RUNNER FILTERS` inside the
# OS sandbox. It installs the seccomp filters given in argv (hex, comma-separated) before any
# untrusted code exists, reports the kernel's view of them, and then serves the trusted checker:
# requests arrive on fd 3 as JSON lines, replies leave on fd 4.
#
# Nothing here is trusted after the program loads: the program may patch or replace all of it.
# That is by design. This process never holds an expected value, a comparison, or the verdict
# channel's secret; whatever it sends back is only "the value the program returned", decoded by
# the checker under a strict typed encoding.
def _boot():
    import sys, os, _json, ctypes, builtins

    if sys.argv[1:] and sys.argv[1]:
        libc = ctypes.CDLL(None, use_errno=True)

        class Fprog(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

        for part in sys.argv[1].split(","):
            raw = bytes.fromhex(part)
            buf = ctypes.create_string_buffer(raw, len(raw))
            prog = Fprog(len(raw) // 8, ctypes.cast(buf, ctypes.c_void_p))
            # PR_SET_SECCOMP = 22, SECCOMP_MODE_FILTER = 2 (needs NO_NEW_PRIVS, set before exec).
            if libc.prctl(22, 2, ctypes.byref(prog), 0, 0) != 0:
                os.write(2, b"runner: seccomp filter refused, errno %d\n" % ctypes.get_errno())
                os._exit(111)
    status = {}
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f.read().decode().splitlines():
                k, _, v = line.partition(":")
                if k in ("Seccomp", "NoNewPrivs"):
                    status[k] = int(v.strip())
    except OSError:
        pass
    if hasattr(sys, "set_int_max_str_digits"):
        sys.set_int_max_str_digits(0)
    if sys.argv[2:3] == ["raw"]:
        # A bare program under the same OS layers (no tests): the sandbox's own test suite.
        src = sys.argv[3]
        globals().pop("_boot", None)
        exec(compile(src, "<program>", "exec"), {"__name__": "__main__", "__builtins__": builtins})
        return

    inf = float("inf")
    from collections import Counter, OrderedDict, defaultdict, deque
    import types
    objects = []

    def handle(x):
        objects.append(x)
        return {"h": len(objects) - 1}

    def enc(x, d=0):
        if d > 500:
            raise ValueError("value nested too deeply")
        t = type(x)
        if x is None or t is bool or t is str or t is int:
            return x
        if t is float:
            if x != x:
                return {"f": "nan"}
            if x == inf:
                return {"f": "inf"}
            if x == -inf:
                return {"f": "-inf"}
            return x
        if isinstance(x, bool):
            return bool(x)
        if isinstance(x, int):
            return int(x)
        if isinstance(x, float):
            return enc(float(x), d)
        if isinstance(x, str):
            return str.__str__(x)
        if isinstance(x, (list, deque)):
            items = [enc(y, d + 1) for y in x]
            return {"dq": items} if isinstance(x, deque) else items
        if isinstance(x, tuple):
            return {"t": [enc(y, d + 1) for y in x]}
        if isinstance(x, (set, frozenset)):
            return {"fs" if isinstance(x, frozenset) else "s": [enc(y, d + 1) for y in x]}
        if isinstance(x, dict):
            tag = "ctr" if isinstance(x, Counter) else "od" if isinstance(x, OrderedDict) else "d"
            return {tag: [[enc(k, d + 1), enc(v, d + 1)] for k, v in x.items()]}
        if isinstance(x, (bytes, bytearray)):
            return {"ba" if isinstance(x, bytearray) else "b": bytes(x).hex()}
        if isinstance(x, complex):
            return {"c": [enc(x.real, d), enc(x.imag, d)]}
        if t is type and getattr(builtins, x.__name__, None) is x:
            return {"ty": x.__name__}
        return handle(x)

    def dec(x):
        if type(x) is list:
            return [dec(y) for y in x]
        if type(x) is not dict:
            return x
        (tag, v), = x.items()
        if tag == "t":
            return tuple(dec(y) for y in v)
        if tag == "s":
            return set(dec(y) for y in v)
        if tag == "fs":
            return frozenset(dec(y) for y in v)
        if tag in ("d", "od", "ctr"):
            cls = {"d": dict, "od": OrderedDict, "ctr": Counter}[tag]
            return cls((dec(k), dec(w)) for k, w in v)
        if tag == "dq":
            return deque(dec(y) for y in v)
        if tag == "b":
            return bytes.fromhex(v)
        if tag == "ba":
            return bytearray.fromhex(v)
        if tag == "f":
            return float(v)
        if tag == "c":
            return complex(dec(v[0]), dec(v[1]))
        if tag == "h":
            return objects[v]
        if tag == "ty":
            return getattr(builtins, v)
        raise ValueError("unknown tag %r" % tag)

    class Ctx:
        strict = True
        object_hook = None
        object_pairs_hook = None
        parse_float = float
        parse_int = int
        parse_constant = float
        memo = {}

    scan = _json.make_scanner(Ctx())
    dump = _json.make_encoder(None, None, _json.encode_basestring_ascii, None, ":", ",",
                              False, False, False)
    _write, _read = os.write, os.read

    def send(obj):
        data = ("".join(dump(obj, 0)) + "\n").encode()
        while data:
            data = data[_write(4, data):]

    send(["hello", status.get("Seccomp", -1), status.get("NoNewPrivs", -1)])
    mutable = (list, dict, set, bytearray, deque)
    buf = b""
    while True:
        while b"\n" not in buf:
            chunk = _read(3, 1 << 16)
            if not chunk:
                return
            buf += chunk
        line, _, buf = buf.partition(b"\n")
        req = scan(line.decode(), 0)[0]
        rid = req["i"]
        op = req["op"]
        try:
            muts = names = None
            if op == "load":
                ns = {"__name__": req["name"], "__builtins__": builtins}
                exec(compile(req["program"], "<program>", "exec"), ns)
                names = []
                for k, v in list(ns.items()):
                    if k.startswith("__"):
                        continue
                    if isinstance(v, types.ModuleType) and v.__name__ == k:
                        names.append([k, {"m": k}])
                    else:
                        names.append([k, enc(v)])
                out = None
            elif op == "script":
                import io
                stdout = io.StringIO()
                saved = sys.stdin, sys.stdout
                sys.stdin, sys.stdout = io.StringIO(req["input"]), stdout
                try:
                    exec(compile(req["program"], "<program>", "exec"),
                         {"__name__": "__main__", "__builtins__": builtins})
                except SystemExit as e:
                    if e.code not in (None, 0):
                        raise
                finally:
                    sys.stdin, sys.stdout = saved
                out = stdout.getvalue()
            else:
                obj = objects[req["h"]]
                if op == "call":
                    args = [dec(a) for a in req["a"]]
                    kwargs = {k: dec(v) for k, v in req["k"]}
                    out = obj(*args, **kwargs)
                    muts = [[k, enc(a)] for k, a in enumerate(args) if isinstance(a, mutable)]
                elif op == "getattr":
                    out = getattr(obj, req["n"])
                elif op == "setattr":
                    setattr(obj, req["n"], dec(req["v"]))
                    out = None
                elif op == "getitem":
                    out = obj[dec(req["key"])]
                elif op == "iter":
                    out = list(obj)
                elif op == "len":
                    out = len(obj)
                elif op == "contains":
                    out = dec(req["x"]) in obj
                elif op == "str":
                    out = str(obj)
                elif op == "repr":
                    out = repr(obj)
                else:
                    raise ValueError("unknown op")
            reply = [rid, "v", names if op == "load" else enc(out)]
            if muts:
                reply.append(muts)
        except BaseException as e:
            try:
                msg = str(e)[:300]
            except BaseException:
                msg = ""
            # The deepest frame of the program's own code: the traceback line the dense code
            # reward localizes (a hint only: the checker range-checks it, and a program that
            # forges it only moves its own penalty).
            line = 0
            try:
                tb = e.__traceback__
                while tb is not None:
                    if tb.tb_frame.f_code.co_filename == "<program>":
                        line = tb.tb_lineno
                    tb = tb.tb_next
            except BaseException:
                line = 0
            reply = [rid, "exc", type(e).__name__, msg, line if type(line) is int else 0]
        try:
            send(reply)
        except BaseException as e:
            send([rid, "exc", "EncodeError", type(e).__name__])


_boot()
