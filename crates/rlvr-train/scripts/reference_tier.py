"""Independent reference for TIER (methods-extra §8) on the calculator environment.

From the raw text of each policy turn, this script finds the tool calls
(<tool_call>{json}</tool_call>), checks each one as the spec says (f: parses to a JSON object
with a string "name" and an object "arguments"; s: f and the name is "calculator" and the
arguments are exactly {"expression": <string of 1..256 chars>}; e: s and the expression
evaluates to an integer: + - * /, unary minus, parentheses, exact division, within i64),
scores the answer turn by its number against the reference, and computes

    R = wF*F + wS*S + wE*E + wA*a - p*failed

with F, S, E the per-call means (0 for an episode without calls when the task needs tools,
1 otherwise), for several weight sets. It shares no code with the Rust implementation: JSON
through Python's json module, arithmetic through Python's ast on arbitrary-precision ints.
Writes crates/rlvr-train/tests/fixtures/tier_golden.json, which tests/env.rs reads.

Run: python3 crates/rlvr-train/scripts/reference_tier.py (stdlib only)
"""

import ast
import json
import pathlib

OPEN, CLOSE = "<tool_call>", "</tool_call>"
MAX_LEN = 256
I64 = (-(2**63), 2**63 - 1)


def call(expression):
    return OPEN + json.dumps({"name": "calculator", "arguments": {"expression": expression}}) + CLOSE


def evaluate(text):
    """The integer value of an expression, or None."""
    if len(text) > MAX_LEN or any(c in text for c in "\t\n\r"):
        return None
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None

    def ev(node):
        if isinstance(node, ast.Constant) and type(node.value) is int:
            value = node.value
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            value = -ev(node.operand)
        elif isinstance(node, ast.BinOp) and type(node.op) in (ast.Add, ast.Sub, ast.Mult, ast.Div):
            a, b = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Add):
                value = a + b
            elif isinstance(node.op, ast.Sub):
                value = a - b
            elif isinstance(node.op, ast.Mult):
                value = a * b
            else:
                if b == 0 or a % b != 0:
                    raise ValueError("inexact")
                value = a // b
        else:
            raise ValueError("not allowed")
        if not I64[0] <= value <= I64[1]:
            raise ValueError("overflow")
        return value

    try:
        return ev(tree)
    except ValueError:
        return None


def checks(turn):
    """(f, s, e) of each call in a turn's text, and whether the turn called at all."""
    out, rest = [], turn
    while OPEN in rest:
        body = rest[rest.index(OPEN) + len(OPEN):]
        if CLOSE not in body:
            out.append((0, 0, 0))
            break
        inner, rest = body[: body.index(CLOSE)], body[body.index(CLOSE) + len(CLOSE):]
        try:
            obj = json.loads(inner.strip())
        except json.JSONDecodeError:
            out.append((0, 0, 0))
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            out.append((0, 0, 0))
            continue
        args = obj.get("arguments", {})
        if not isinstance(args, dict):
            out.append((0, 0, 0))
            continue
        expr = args.get("expression")
        s = int(
            obj["name"] == "calculator"
            and set(args) == {"expression"}
            and isinstance(expr, str)
            and 1 <= len(expr) <= MAX_LEN
        )
        e = int(s == 1 and evaluate(expr) is not None)
        out.append((1, s, e))
    return out


def play(turns, max_turns):
    """The calls of an episode and its answer turn (None when the turns ran out)."""
    calls = []
    for turn in turns[:max_turns]:
        found = checks(turn)
        if not found:
            return calls, turn
        calls.extend(found)
    return calls, None


def answer_score(answer, reference):
    if answer is None:
        return 0.0
    try:
        return float(int(answer.strip()) == int(reference))
    except ValueError:
        return 0.0


def tier(calls, a, w):
    n = len(calls)
    if n == 0:
        F = S = E = 0.0 if w["needs_tools"] else 1.0
    else:
        F = sum(c[0] for c in calls) / n
        S = sum(c[1] for c in calls) / n
        E = sum(c[2] for c in calls) / n
    failed = sum(1 for c in calls if c[2] == 0)
    R = w["format"] * F + w["schema"] * S + w["execution"] * E + w["answer"] * a
    return R - w["failed_call_penalty"] * failed, (F, S, E, failed)


BAD_JSON = OPEN + '{"name": "calculator", "arguments": {"expression": "1+2"}' + CLOSE
CASES = [
    ("oracle", ["" + call("23*7+15"), "176"], "176"),
    ("oracle_wrong_answer", [call("23*7+15"), "175"], "176"),
    ("no_call_right", ["176"], "176"),
    ("no_call_wrong", ["12"], "176"),
    ("two_calls_one_turn", [call("9*9") + " and " + call("81-4"), "77"], "77"),
    ("two_turns_of_calls", [call("9*9"), call("81-4"), "77"], "77"),
    ("calls_reordered", [call("81-4") + call("9*9"), "77"], "77"),
    ("inexact_division", [call("7/2"), "3"], "3"),
    ("division_by_zero", [call("5/0"), call("5*1"), "5"], "5"),
    ("unknown_tool", [OPEN + '{"name":"shell","arguments":{"cmd":"ls"}}' + CLOSE, "4"], "4"),
    ("extra_argument", [OPEN + '{"name":"calculator","arguments":{"expression":"2+2","x":1}}' + CLOSE, "4"], "4"),
    ("wrong_argument_type", [OPEN + '{"name":"calculator","arguments":{"expression":4}}' + CLOSE, "4"], "4"),
    ("malformed_json", [BAD_JSON, "3"], "3"),
    ("arguments_not_object", [OPEN + '{"name":"calculator","arguments":"2+2"}' + CLOSE, "4"], "4"),
    ("unclosed", [OPEN + '{"name":"calculator"', "4"], "4"),
    ("syntax_error", [call("2+*3"), call("(1+2)*3"), "9"], "9"),
    ("budget_ends", [call("1+1"), call("2+2"), call("3+3")], "6"),
    ("overflow", [call("9223372036854775807+1"), call("-(3-10)"), "7"], "7"),
]
WEIGHTS = {
    "default": dict(format=0.1, schema=0.2, execution=0.2, answer=0.5, failed_call_penalty=0.0, needs_tools=True),
    "penalized": dict(format=0.1, schema=0.2, execution=0.2, answer=0.5, failed_call_penalty=0.05, needs_tools=True),
    "answer_only": dict(format=0.0, schema=0.0, execution=0.0, answer=1.0, failed_call_penalty=0.0, needs_tools=True),
    "tools_optional": dict(format=0.3, schema=0.1, execution=0.4, answer=0.2, failed_call_penalty=0.1, needs_tools=False),
}
MAX_TURNS = 3


def main():
    out = {"max_turns": MAX_TURNS, "weights": WEIGHTS, "cases": []}
    for name, turns, reference in CASES:
        calls, answer = play(turns, MAX_TURNS)
        a = answer_score(answer, reference)
        case = {"name": name, "turns": turns, "reference": reference, "answer_score": a, "checks": calls, "rewards": {}}
        for wname, w in WEIGHTS.items():
            R, (F, S, E, failed) = tier(calls, a, w)
            case["rewards"][wname] = {"R": R, "F": F, "S": S, "E": E, "failed": failed}
        out["cases"].append(case)
    path = pathlib.Path(__file__).resolve().parent.parent / "tests/fixtures/tier_golden.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {len(CASES)} episodes x {len(WEIGHTS)} weight sets to {path}")


if __name__ == "__main__":
    main()
