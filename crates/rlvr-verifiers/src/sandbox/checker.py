# Trusted checker of rlvr-verifiers, run as `python3 -I -S -c CHECKER` in its own process (never
# the candidate's). It reads its job and the run's nonce from stdin, runs the tests, setup code
# and HumanEval `check` itself, and reports on fd 5 as "<nonce> test <index> <0|1> <name> <msg>"
# (followed by "<nonce> tb <index> <line>" when the test failed on an exception of the program,
# raised at that line of the program; "tb load <line>" for a failed load), then "<nonce> done"
# (or "<nonce> violation <reason>").
#
# The candidate's program lives in another process (the runner, behind the OS sandbox). Every name
# the program defines is a `Remote` here: calling it, reading an attribute, indexing or iterating
# sends one request on fd 4 and reads one reply on fd 3. Replies are decoded under a strict typed
# encoding into fresh builtin values (int, float, str, bool, None, list, tuple, dict, set,
# frozenset, bytes, bytearray, complex, Counter, OrderedDict, deque) or opaque handles, so every
# comparison, `assert` and expected value stays in this interpreter, on values whose methods the
# program never touched. Anything off-protocol (bad JSON, duplicate keys, unknown tags, a reply to
# the wrong request, a load error, output nobody asked for) is a violation: the run scores 0.
def _main():
    import sys, os, builtins, _json
    from collections import Counter, OrderedDict, deque

    if hasattr(sys, "set_int_max_str_digits"):
        sys.set_int_max_str_digits(0)
    spec_text = b""
    while True:
        chunk = os.read(0, 1 << 20)
        if not chunk:
            break
        spec_text += chunk

    class Ctx:
        strict = True
        object_hook = None
        object_pairs_hook = None
        parse_float = float
        parse_int = int
        parse_constant = float
        memo = {}

    spec = _json.make_scanner(Ctx())(spec_text.decode("utf-8"), 0)[0]
    nonce = spec["nonce"]
    max_line = spec.get("max_reply_bytes", 16 << 20)

    def report(text):
        data = ("%s %s\n" % (nonce, text)).encode()
        while data:
            data = data[os.write(5, data):]

    def clean(s, n):
        return "".join(c if c.isalnum() or c in "_.:" else "_" for c in str(s))[:n] or "-"

    def printable(s):
        return "".join(c if c.isprintable() else " " for c in str(s))[:200]

    class Violation(BaseException):
        pass

    violated = []

    def violation(reason):
        if not violated:
            violated.append(reason)
        raise Violation(reason)

    def pairs(kv):
        if len(kv) != 1:
            violation("object_with_%d_keys" % len(kv))
        return kv[0]

    def reject(name):
        violation("bare_constant")

    class Strict:
        strict = True
        object_hook = None
        object_pairs_hook = staticmethod(pairs)
        parse_float = float
        parse_int = int
        parse_constant = staticmethod(reject)
        memo = {}

    scan = _json.make_scanner(Strict())
    dump = _json.make_encoder(None, None, _json.encode_basestring_ascii, None, ":", ",",
                              False, False, False)
    specials = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}
    hashable = (int, float, str, bool, type(None), tuple, frozenset, bytes, complex)

    class Remote:
        """A value of the program's own making; it lives in the candidate's process."""

        __slots__ = ("_rlvr_h",)

        def __init__(self, h):
            object.__setattr__(self, "_rlvr_h", h)

        def __call__(self, *args, **kwargs):
            reply = rpc({"op": "call", "h": self._rlvr_h, "a": [enc(a) for a in args],
                         "k": [[k, enc(v)] for k, v in kwargs.items()]})
            for pos, state in reply.get("m", ()):
                if type(pos) is not int or not 0 <= pos < len(args):
                    violation("bad_mutation_index")
                writeback(args[pos], dec(state))
            return result(reply)

        def __getattr__(self, name):
            return result(rpc({"op": "getattr", "h": self._rlvr_h, "n": name}))

        def __setattr__(self, name, value):
            result(rpc({"op": "setattr", "h": self._rlvr_h, "n": name, "v": enc(value)}))

        def __getitem__(self, key):
            return result(rpc({"op": "getitem", "h": self._rlvr_h, "key": enc(key)}))

        def __iter__(self):
            got = result(rpc({"op": "iter", "h": self._rlvr_h}))
            if type(got) is not list:
                violation("iter_not_list")
            return iter(got)

        def __len__(self):
            got = result(rpc({"op": "len", "h": self._rlvr_h}))
            if type(got) is not int:
                violation("len_not_int")
            return got

        def __contains__(self, x):
            got = result(rpc({"op": "contains", "h": self._rlvr_h, "x": enc(x)}))
            if type(got) is not bool:
                violation("contains_not_bool")
            return got

        def __str__(self):
            got = result(rpc({"op": "str", "h": self._rlvr_h}))
            if type(got) is not str:
                violation("str_not_str")
            return got

        def __repr__(self):
            got = result(rpc({"op": "repr", "h": self._rlvr_h}))
            if type(got) is not str:
                violation("repr_not_str")
            return got

        def _refuse(self, *a):
            raise TypeError("a value of the program's own type cannot be compared or tested")

        __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __bool__ = __hash__ = _refuse

    class Lazy:
        """A stdlib module the program imported, imported here (this interpreter's own copy)
        only when a test first uses it."""

        __slots__ = ("_rlvr_name",)

        def __init__(self, name):
            object.__setattr__(self, "_rlvr_name", name)

        def __getattr__(self, attr):
            return getattr(__import__(object.__getattribute__(self, "_rlvr_name")), attr)

    def writeback(arg, new):
        t = type(arg)
        if t is not type(new):
            return
        if t is list or t is bytearray:
            arg[:] = new
        elif t is dict or t is set:
            arg.clear()
            arg.update(new)

    def enc(x, d=0):
        if d > 500:
            raise ValueError("argument nested too deeply")
        t = type(x)
        if x is None or t is bool or t is str or t is int:
            return x
        if t is float:
            return {"f": "nan" if x != x else "inf" if x > 0 else "-inf"} if x - x != 0 else x
        if t is list:
            return [enc(y, d + 1) for y in x]
        if t is tuple:
            return {"t": [enc(y, d + 1) for y in x]}
        if t is set or t is frozenset:
            return {"s" if t is set else "fs": [enc(y, d + 1) for y in x]}
        if t is dict or t is OrderedDict or t is Counter:
            tag = "d" if t is dict else "od" if t is OrderedDict else "ctr"
            return {tag: [[enc(k, d + 1), enc(v, d + 1)] for k, v in x.items()]}
        if t is deque:
            return {"dq": [enc(y, d + 1) for y in x]}
        if t is bytes or t is bytearray:
            return {"b" if t is bytes else "ba": x.hex()}
        if t is complex:
            return {"c": [enc(x.real), enc(x.imag)]}
        if t is Remote:
            return {"h": object.__getattribute__(x, "_rlvr_h")}
        if t is type and getattr(builtins, x.__name__, None) is x:
            return {"ty": x.__name__}
        raise TypeError("a %s cannot be passed to the program's process" % t.__name__)

    def seq(v, d):
        if type(v) is not list:
            violation("tag_wants_list")
        return [dec(y, d + 1) for y in v]

    def dec(x, d=0):
        if d > 500:
            violation("too_deep")
        t = type(x)
        if x is None or t is bool or t is str or t is int or t is float:
            return x
        if t is list:
            return [dec(y, d + 1) for y in x]
        if t is not tuple:
            violation("bad_value")
        tag, v = x
        try:
            if tag == "t":
                return tuple(seq(v, d))
            if tag == "s" or tag == "fs":
                items = seq(v, d)
                for y in items:
                    if type(y) not in hashable:
                        violation("unhashable_member")
                return set(items) if tag == "s" else frozenset(items)
            if tag == "d" or tag == "od" or tag == "ctr":
                if type(v) is not list:
                    violation("tag_wants_list")
                out = {"d": dict, "od": OrderedDict, "ctr": Counter}[tag]()
                for kv in v:
                    if type(kv) is not list or len(kv) != 2:
                        violation("bad_pair")
                    k = dec(kv[0], d + 1)
                    if type(k) not in hashable:
                        violation("unhashable_key")
                    out[k] = dec(kv[1], d + 1)
                return out
            if tag == "dq":
                return deque(seq(v, d))
            if tag == "b" or tag == "ba":
                if type(v) is not str:
                    violation("bytes_wants_hex")
                return bytes.fromhex(v) if tag == "b" else bytearray.fromhex(v)
            if tag == "f":
                if v not in specials:
                    violation("bad_float")
                return specials[v]
            if tag == "c":
                if type(v) is not list or len(v) != 2 or not all(type(y) in (int, float) for y in v):
                    violation("bad_complex")
                return complex(v[0], v[1])
            if tag == "h":
                if type(v) is not int:
                    violation("bad_handle")
                return Remote(v)
            if tag == "ty":
                cls = getattr(builtins, v, None) if type(v) is str else None
                if not isinstance(cls, type):
                    violation("bad_type")
                return cls
        except (TypeError, ValueError):
            violation("bad_" + clean(tag, 8))
        violation("unknown_tag")

    # Replies: one line each, read with a private buffer so that leftovers can be detected.
    inbox = [b""]
    counter = [0]

    def readline():
        buf = inbox[0]
        while b"\n" not in buf:
            if len(buf) > max_line:
                violation("reply_too_long")
            try:
                chunk = os.read(3, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                violation("program_process_ended")
            buf += chunk
        line, _, inbox[0] = buf.partition(b"\n")
        return line

    def parse(line):
        try:
            text = line.decode("utf-8")
            obj, end = scan(text, 0)
        except Violation:
            raise
        except BaseException:
            violation("malformed_reply")
        if end != len(text):
            violation("trailing_bytes_in_reply")
        return obj

    def fields(obj):
        # `pairs` turned every JSON object into a (key, value) tuple; a reply is a JSON object
        # with several keys, which the strict decoder refuses, so replies are JSON lists:
        # [id, "v", value] / [id, "v", value, mutations] / [id, "exc", name, message, line].
        if type(obj) is not list or len(obj) < 3 or type(obj[0]) is not int:
            violation("bad_reply_shape")
        return obj

    def rpc(msg):
        if violated:
            raise Violation(violated[0])
        counter[0] += 1
        msg["i"] = counter[0]
        data = ("".join(dump(msg, 0)) + "\n").encode()
        try:
            while data:
                data = data[os.write(4, data):]
        except OSError:
            violation("program_process_ended")
        reply = fields(parse(readline()))
        if reply[0] != counter[0]:
            violation("reply_to_wrong_request")
        kind = reply[1]
        if kind == "v" and len(reply) in (3, 4):
            out = {"v": reply[2]}
            if len(reply) == 4:
                if type(reply[3]) is not list:
                    violation("bad_mutations")
                for m in reply[3]:
                    if type(m) is not list or len(m) != 2:
                        violation("bad_mutations")
                out["m"] = reply[3]
            return out
        if (kind == "exc" and len(reply) in (4, 5) and type(reply[2]) is str
                and type(reply[3]) is str and (len(reply) == 4 or type(reply[4]) is int)):
            return {"exc": reply[2], "msg": reply[3], "line": reply[4] if len(reply) == 5 else 0}
        violation("bad_reply_kind")

    def result(reply):
        if "exc" in reply:
            cls = getattr(builtins, reply["exc"], None)
            if not (isinstance(cls, type) and issubclass(cls, Exception)):
                cls = RuntimeError
            err = cls("from the program: %s: %s" % (clean(reply["exc"], 40), printable(reply["msg"])))
            err._rlvr_line = max(0, reply["line"])
            raise err
        return dec(reply["v"])

    def finish():
        if not violated and inbox[0]:
            violated.append("unrequested_output")
        if not violated:
            os.set_blocking(3, False)
            try:
                if os.read(3, 1):
                    violated.append("unrequested_output")
            except BlockingIOError:
                pass
            except OSError:
                pass
        if violated:
            report("violation " + clean(violated[0], 80))
        else:
            report("done")

    # The hello comes from the runner before any untrusted code exists.
    try:
        hello = parse(readline())
        if (type(hello) is not list or len(hello) != 3 or hello[0] != "hello"
                or not all(type(v) is int for v in hello[1:])):
            violation("bad_hello")
        report("hello %d %d" % (hello[1], hello[2]))
    except Violation:
        finish()
        return

    def compile_all(items, label):
        out = []
        for k, src in enumerate(items):
            try:
                out.append(compile(src, "<%s %d>" % (label, k), "exec"))
            except BaseException as e:
                out.append(e)
        return out

    def run(index, code, ns, call=None):
        if violated:
            return
        if isinstance(code, BaseException):
            report("test %d 0 bad_test:%s -" % (index, type(code).__name__))
            return
        try:
            exec(code, ns)
            if call is not None:
                call()
            ok, name, msg = 1, "ok", ""
        except Violation:
            return
        except BaseException as e:
            ok, name, msg = 0, type(e).__name__, e
        if violated:
            return
        report("test %d %d %s %s" % (index, ok, clean(name, 60), printable(msg) or "-"))
        if not ok and type(getattr(msg, "_rlvr_line", None)) is int:
            report("tb %d %d" % (index, msg._rlvr_line))

    io_cases = spec.get("io_cases") or []
    program = spec["program"]
    if io_cases:
        for k, case in enumerate(io_cases):
            if violated:
                break
            try:
                reply = rpc({"op": "script", "program": program, "input": case["input"]})
                got = result(reply)
                if type(got) is not str:
                    violation("script_output_not_str")
                a = [l.rstrip() for l in got.rstrip().split("\n")]
                b = [l.rstrip() for l in case["output"].rstrip().split("\n")]
                report("test %d %d %s -" % (k, int(a == b), "ok" if a == b else "wrong_output"))
            except Violation:
                break
            except BaseException as e:
                report("test %d 0 %s %s" % (k, clean(type(e).__name__, 60), printable(e) or "-"))
                if type(getattr(e, "_rlvr_line", None)) is int:
                    report("tb %d %d" % (k, e._rlvr_line))
        finish()
        return

    tests = compile_all(spec.get("tests") or [], "test")
    setup = spec.get("setup") or ""
    check = spec.get("check")
    try:
        reply = rpc({"op": "load", "program": program, "name": "solution"})
        if "exc" in reply:
            report("tb load %d" % max(0, reply["line"]))
            violation("load:" + clean(reply["exc"], 40))
        names = reply["v"]
        if type(names) is not list:
            violation("bad_names")
        ns = {"__name__": "__rlvr_test__", "__builtins__": builtins}
        shadow, program_names = {}, set()
        stdlib = sys.stdlib_module_names
        refused = {"antigravity", "this", "webbrowser", "turtle", "tkinter", "idlelib", "pydoc"}
        for entry in names:
            if type(entry) is not list or len(entry) != 2 or type(entry[0]) is not str:
                violation("bad_names")
            name, value = entry
            if name.startswith("__"):
                continue
            if hasattr(builtins, name):
                # A builtin's name keeps its builtin meaning, except in a test that calls
                # nothing else of the program's (then it is the function under test).
                if not (type(value) is tuple and value[0] == "m"):
                    shadow[name] = dec(value)
                continue
            program_names.add(name)
            if type(value) is tuple and value[0] == "m":
                if value[1] == name and name in stdlib and name not in refused:
                    ns[name] = Lazy(name)
                continue
            ns[name] = dec(value)
        if setup:
            exec(compile(setup, "<setup>", "exec"), ns)
    except Violation:
        finish()
        return
    except BaseException as e:
        for k in range(len(tests) + (check is not None)):
            report("test %d 0 setup:%s %s" % (k, clean(type(e).__name__, 40), printable(e) or "-"))
        finish()
        return
    def refs(code, out):
        out.update(code.co_names)
        for c in code.co_consts:
            if type(c) is type(code):
                refs(c, out)
        return out

    for k, code in enumerate(tests):
        test_ns = ns
        if shadow and not isinstance(code, BaseException):
            used = refs(code, set())
            if not used & program_names and used & shadow.keys():
                test_ns = dict(ns)
                test_ns.update({n: shadow[n] for n in used & shadow.keys()})
        run(k, code, test_ns)
    if check is not None and not violated:
        entry = spec.get("entry_point") or ""
        code = compile_all([check], "check")[0]
        target = lambda: ns["check"](shadow[entry] if entry in shadow else ns[entry])
        run(len(tests), code, ns, target)
    finish()


_main()
