"""Independent reference for the advantage-shaping stages of rlvr-objectives.

Implements the formulas of the method specification (methods-extra.md: EDAS §1, ACR + AVSPO §2,
CurveRL §3, LamPO §4, TMN-Reweight §5, POW3R §6, SRaR §7; methods-core.md: DGG §7) directly in
numpy float64, plus the stage order of `StagesConfig::apply` (reward composition -> ACR -> one
estimator -> AVSPO on collapsed groups -> CurveRL / TMN weights -> EDAS -> SRaR offsets), on fixed
inputs, and writes tests/fixtures/shaping_golden.json. The Rust tests feed the same inputs to
`StagesConfig::apply` and must match to 1e-5.

Run: python crates/rlvr-objectives/scripts/reference_shaping.py (needs numpy)
"""

import copy
import json
import math
import pathlib
import re

import numpy as np

EPS = 1e-6


def f32(x):
    return float(np.float32(x))


# ----------------------------------------------------------------------------------------------
# Fixed inputs.

def make_input(seed, prompts, g, pattern):
    """pattern: per prompt, 'mixed', 'all1', 'all0' or 'rand' (non-binary rewards)."""
    rng = np.random.RandomState(seed)
    rewards, passed, answers, logp, texts, refs, tasks = [], [], [], [], [], [], []
    scores, rubrics, judgments = [], [], []
    tasks_names = ["math", "code", "qa"]
    for p in range(prompts):
        kind = pattern[p]
        if kind == "mixed":
            r = [1.0] + [float(rng.randint(0, 2)) for _ in range(g - 1)]
            if all(x == 1.0 for x in r):
                r[-1] = 0.0
            rng.shuffle(r)
        elif kind == "all1":
            r = [1.0] * g
        elif kind == "all0":
            r = [0.0] * g
        else:
            r = [f32(x) for x in rng.uniform(0.0, 1.0, size=g)]
        truth = str(10 + p)
        k = 0 if p == prompts - 1 else 3  # the last prompt has an empty rubric
        rubrics.append({"weights": [2.0, 1.0, -1.0][:k], "categories": [0, 0, 1][:k]})
        ref = None if p % 3 == 2 else f"first compute {p} then add one to get {truth}"
        for i in range(g):
            ok = r[i] >= 1.0
            rewards.append(r[i])
            passed.append(bool(ok))
            if ok:
                answers.append(truth)
            else:
                choice = rng.randint(0, 4)
                answers.append(None if choice == 3 else ["7", "7", "8"][choice])
            logp.append(f32(rng.uniform(-2.0, -0.2)))
            nsteps = rng.randint(0, 4)
            body = " ".join(f"### Step {s + 1}: compute {p} part {s} now" for s in range(nsteps))
            if rng.rand() < 0.7:
                body += f" so \\boxed{{{answers[-1] or 'x'}}}"
            texts.append(("we first " if rng.rand() < 0.5 else "") + body)
            refs.append(ref)
            tasks.append(tasks_names[p % 3])
            scores.append([float(rng.choice([0.0, 0.5, 1.0])) for _ in range(k)])
            items = []
            for kind_name, count in [("suggest", 2), ("pitfall", 1), ("bonus", 1), ("answer", 1)]:
                for _ in range(count):
                    items.append({"kind": kind_name, "satisfied": bool(rng.rand() < 0.6),
                                  "step": int(rng.randint(-1, 4))})
            judgments.append(items)
    return {"rewards": rewards, "group_size": g, "passed": passed, "answers": answers,
            "seq_logp_mean": logp, "texts": texts, "references": refs, "task_ids": tasks,
            "rubric_scores": scores, "rubrics": rubrics, "judgments": judgments}


# ----------------------------------------------------------------------------------------------
# Stages, from the spec formulas.

def groups(x, g):
    return [x[i:i + g] for i in range(0, len(x), g)]


def base_advantages(rewards, g, estimator):
    out = []
    for grp in groups(np.asarray(rewards, dtype=np.float64), g):
        m = grp.mean()
        if np.all(grp == grp[0]):
            out += [0.0] * len(grp)
        elif estimator == "group_std":
            out += list((grp - m) / (grp.std(ddof=1) + EPS))
        else:
            out += list(grp - m)
    return out


def acr_stats(rewards, passed, g, thr):
    coll, ac, aw = [], 0, 0
    for grp, ps in zip(groups(rewards, g), groups(passed, g)):
        c = np.var(np.asarray(grp, dtype=np.float64)) < f32(thr)
        coll.append(bool(c))
        ac += c and all(ps)
        aw += c and not any(ps)
    n = len(coll)
    return coll, sum(coll) / n, ac / n, aw / n


def avspo_group(grp, virt, alpha):
    grp = np.asarray(grp, dtype=np.float64)
    virt = np.asarray(virt, dtype=np.float64)
    tot = len(grp) + alpha * len(virt)
    mu = (grp.sum() + alpha * virt.sum()) / tot
    var = (((grp - mu) ** 2).sum() + alpha * ((virt - mu) ** 2).sum()) / tot
    return list((grp - mu) / (math.sqrt(var) + EPS))


def curve_rl(rewards, g, pool, pool_num):
    r = np.asarray(rewards, dtype=np.float64)
    s = r if np.all((r >= 0) & (r <= 1)) else (r > 0).astype(np.float64)
    rates = [grp.mean() for grp in groups(s, g)]
    cur = [p for p in rates if 0 < p < 1]
    ref = [p for batch in pool for p in batch]
    if not ref:
        ref = cur
    bins = max(g + 1, 2)
    counts = np.zeros(bins)
    for p in ref:
        counts[min(int(math.floor(p * bins)), bins - 1)] += 1
    mass = counts / max(len(ref), 1)
    cdf = np.cumsum(mass)
    w = mass / np.maximum(cdf, 1e-12)
    pw = [w[min(int(math.floor(p * bins)), bins - 1)] if 0 < p < 1 else 0.0 for p in rates]
    centered = [s[i] - rates[i // g] for i in range(len(s))]
    pool.append(cur)
    while len(pool) > pool_num:
        pool.pop(0)
    return pw, centered, w


def lampo(rewards, logp, g, tau, normalize_std):
    out, ws = [], []
    for grp, lp in zip(groups(rewards, g), groups(logp, g)):
        scale = (np.std(grp, ddof=1) + EPS) if normalize_std and len(grp) > 1 else 1.0
        for i in range(len(grp)):
            if len(grp) < 2:
                out.append(0.0)
                continue
            a = 0.0
            for j in range(len(grp)):
                if j == i:
                    continue
                sgn = np.sign(grp[i] - grp[j])
                w = 2.0 / (1.0 + math.exp(sgn * (lp[i] - lp[j]) / tau))
                if grp[i] != grp[j]:
                    ws.append(w)
                a += (grp[i] - grp[j]) * w
            out.append(a / (len(grp) - 1) / scale)
    return out, (np.mean(ws) if ws else 0.0)


def rouge_l(cand, ref, cap):
    c, r = cand.split()[:cap], ref.split()[:cap]
    if not c or not r:
        return 0.0
    table = [[0] * (len(r) + 1) for _ in range(len(c) + 1)]
    for i in range(len(c)):
        for j in range(len(r)):
            table[i + 1][j + 1] = table[i][j] + 1 if c[i] == r[j] else max(table[i][j + 1],
                                                                            table[i + 1][j])
    lcs = table[len(c)][len(r)]
    if lcs == 0:
        return 0.0
    p, rec = lcs / len(c), lcs / len(r)
    return 2 * p * rec / (p + rec)


def tmn(rewards, tasks, g, cfg):
    gs = groups(np.asarray(rewards, dtype=np.float64), g)
    ts = [tasks[i * g] for i in range(len(gs))]
    mus = [grp.mean() if len(grp) > 1 else 0.0 for grp in gs]
    vars_ = [grp.var(ddof=1) if len(grp) > 1 else 1.0 for grp in gs]
    adv, wts, passes = [], [], []
    for grp, mu, t in zip(gs, mus, ts):
        idx = [k for k in range(len(gs)) if ts[k] == t]
        scale = math.sqrt(np.mean([vars_[k] for k in idx]))
        big_m = np.mean([mus[k] for k in idx])
        sm = big_m if len(grp) < 2 else cfg["smooth_alpha"] * mu + (1 - cfg["smooth_alpha"]) * big_m
        p = float(np.mean(grp > sm))
        passes.append(p)
        wp, wn = math.exp(cfg["gamma"] * (0.5 - p)), math.exp(cfg["gamma"] * (p - 0.5))
        for r in grp:
            adv.append((r - mu) / (scale + EPS))
            wts.append(wp if r > mu else wn)
    return adv, wts, float(np.mean(passes))


def edas(adv, passed, answers, g, cfg):
    adv = list(adv)
    shaped, ks, hs, wsum, wcount = 0, [], [], 0.0, 0
    for s in range(0, len(adv), g):
        wrong = [i for i in range(s, s + g) if not passed[i]]
        m = len(wrong)
        if m < 2 or all(adv[i] == 0.0 for i in range(s, s + g)):
            continue
        keys = [answers[i] for i in wrong]
        sizes = {k: keys.count(k) for k in set(keys)}
        kk = len(sizes)
        if cfg["mode"] == "absolute":
            om = [min(max((sizes[answers[i]] / cfg["tau"]) ** cfg["alpha"], cfg["weight_min"]),
                      cfg["weight_max"]) for i in wrong]
        else:
            raw = [(sizes[answers[i]] / m * kk) ** cfg["alpha"] for i in wrong]
            om = [x / np.mean(raw) for x in raw]
        for i, w in zip(wrong, om):
            if adv[i] < 0:
                adv[i] *= w
        shaped += 1
        ks.append(kk)
        hs.append(-sum((n / m) * math.log(n / m) for n in sizes.values()) / math.log(m))
        wsum += sum(om)
        wcount += m
    stats = {"shaping/edas_groups": shaped,
             "shaping/edas_distinct_mean": np.mean(ks) if ks else 0.0,
             "shaping/edas_entropy_mean": np.mean(hs) if hs else 0.0,
             "shaping/edas_weight_mean": wsum / wcount if wcount else 0.0}
    return adv, stats


def pow3r(rewards, scores, rubrics, g, cfg):
    out, human, strict, empty = list(rewards), list(rewards), [False] * len(rewards), 0
    for p in range(len(rewards) // g):
        s = np.asarray(scores[p * g:(p + 1) * g], dtype=np.float64)
        k = s.shape[1] if s.ndim == 2 else 0
        if k == 0:
            empty += 1
            continue
        h = np.asarray(rubrics[p]["weights"] or [1.0] * k, dtype=np.float64)
        cat = rubrics[p]["categories"] or [0] * k
        c = s.std(axis=0)  # population std per criterion
        raw = np.abs(h) * (c + cfg["contrast_eps"]) ** cfg["gamma"]
        hat = np.zeros(k)
        for kk in range(k):
            members = [j for j in range(k) if cat[j] == cat[kk]]
            mass, norm = np.abs(h[members]).sum(), raw[members].sum()
            hat[kk] = mass * raw[kk] / norm if norm > 0 else abs(h[kk])
        w = (1 - cfg["lambda"]) * np.abs(h) + cfg["lambda"] * hat
        tot = np.abs(h).sum()
        for i in range(g):
            out[p * g + i] = float((np.sign(h) * w * s[i]).sum() / tot)
            human[p * g + i] = float((h * s[i]).sum() / tot)
            strict[p * g + i] = all(((s[i][j] >= 0.5) == (h[j] > 0)) or h[j] == 0 for j in range(k))
    return out, human, strict, empty


def headers(text):
    return [m.start() for m in re.finditer(r"### Step \d+:", text)]


def srar_rewards(rewards, texts, cfg):
    fmts = [1.0 if headers(t) and "\\boxed{" in t else 0.0 for t in texts]
    lam = f32(cfg["format_weight"])
    return [f32((1 - lam) * r + lam * f) for r, f in zip(rewards, fmts)], float(np.mean(fmts))


def srar_offsets(texts, judgments, g, cfg):
    values = {"suggest": cfg["suggest_reward"], "pitfall": -abs(cfg["pitfall_reward"]),
              "bonus": cfg["bonus_reward"]}
    deltas = []
    for items in judgments:
        counts = {k: max(sum(1 for it in items if it["kind"] == k), 1) for k in values}
        d = {}
        for it in items:
            if it["satisfied"] and it["step"] >= 0 and it["kind"] in values:
                d[it["step"]] = d.get(it["step"], 0.0) + values[it["kind"]] / counts[it["kind"]]
        deltas.append(d)
    out = [[] for _ in texts]
    for s in range(0, len(texts), g):
        keys = sorted({k for i in range(s, s + g) for k in deltas[i]})
        for k in keys:
            have = [(i, deltas[i][k]) for i in range(s, s + g) if k in deltas[i]]
            vals = np.asarray([v for _, v in have])
            if len(vals) < 2:
                continue
            sd = vals.std(ddof=1)
            if sd <= EPS:
                continue
            for i, v in have:
                off = (v - vals.mean()) / (sd + EPS)
                if cfg["offset_clip"] > 0:
                    off = float(np.clip(off, -cfg["offset_clip"], cfg["offset_clip"]))
                h = headers(texts[i])
                n = len(texts[i])
                span = (h[k - 1], h[k] if k < len(h) else n) if 1 <= k <= len(h) else (0, n)
                out[i].append([span[0], span[1], off])
    return out


def dgg(seq, cfg):
    last, window, out = None, [], []
    for norm, epoch in seq:
        e = norm * norm
        if last is None:
            last = e
            out.append(True)
            continue
        dg = e - last
        if len(window) >= cfg["window"] and epoch >= 1:
            z = (dg - np.mean(window)) / (np.std(window) + 1e-12)
            if z > cfg["threshold"]:
                out.append(False)
                continue
        window = (window + [dg])[-cfg["window"]:]
        last = e
        out.append(True)
    return out


def relex(base, cks, rank, window, last_step, target_step):
    """RELEX (methods-core.md §8) with numpy's SVD of the delta matrix (not the Gram route)."""
    m = np.asarray(cks, dtype=np.float64) - np.asarray(base, dtype=np.float64)
    u, s, vt = np.linalg.svd(m, full_matrices=False)
    w = window or len(cks)
    explained = float((s[:rank] ** 2).sum() / (s ** 2).sum())
    pred = np.asarray(base, dtype=np.float64).copy()
    tau = np.arange(w, dtype=np.float64)
    for k in range(rank):
        if s[k] <= 1e-6 * s[0]:
            break
        c = (u[:, k] * s[k])[-w:]
        slope = ((tau - tau.mean()) * (c - c.mean())).sum() / ((tau - tau.mean()) ** 2).sum()
        icpt = c.mean() - slope * tau.mean()
        pred += (slope * ((w - 1) + (target_step - last_step)) + icpt) * vt[k]
    return {"singular_values": [float(x) for x in s[:rank]], "explained_variance": explained,
            "prediction": [float(x) for x in pred]}


# ----------------------------------------------------------------------------------------------
# The pipeline.

DEFAULTS = {
    "avspo": {"alpha": 0.5, "virtual_samples": 8, "construction": "stratified", "reward_min": 0.0,
              "reward_max": 1.0, "fixed_value": 0.5, "half_life": 100.0, "adaptive": True,
              "threshold_init": 0.5, "threshold_min": 0.3, "threshold_decay_steps": 500,
              "scale_alpha": False},
    "edas": {"alpha": 0.5, "tau": 2.0, "weight_min": 0.5, "weight_max": 2.0, "mode": "absolute"},
    "curve_rl": {"pool_num": 10, "advantage": "centered"},
    "lampo": {"pairwise": True, "temperature": 1.0, "normalize_std": False, "rouge_beta": 0.1,
              "rouge_max_tokens": 2048},
    "tmn": {"task_scale": True, "difficulty_reweight": True, "smooth_alpha": 0.8, "gamma": 1.0},
    "pow3r": {"lambda": 0.5, "gamma": 1.0, "contrast_eps": 0.05},
    "srar": {"format_weight": 0.1, "suggest_reward": 0.8, "pitfall_reward": -1.0,
             "bonus_reward": 1.0, "offset_clip": 0.0},
}


def resolved(config):
    return {k: {**DEFAULTS[k], **v} for k, v in config.items() if k in DEFAULTS}


def apply(config, inp, estimator, state):
    cfg = resolved(config)
    g, n = inp["group_size"], len(inp["rewards"])
    r = [f32(x) for x in inp["rewards"]]
    m = {}
    if "pow3r" in cfg:
        r, human, strict, empty = pow3r(r, inp["rubric_scores"], inp["rubrics"], g, cfg["pow3r"])
        r = [f32(x) for x in r]
        m["shaping/pow3r_reward_mean"] = float(np.mean(r))
        m["shaping/pow3r_human_reward_mean"] = float(np.mean([f32(x) for x in human]))
        m["shaping/pow3r_strict_frac"] = float(np.mean(strict))
        m["shaping/pow3r_empty_rubric_groups"] = empty
    if "srar" in cfg:
        r, rate = srar_rewards(r, inp["texts"], cfg["srar"])
        m["shaping/srar_format_rate"] = rate
    if "lampo" in cfg and cfg["lampo"]["rouge_beta"] > 0:
        fs = []
        for i in range(n):
            if inp["references"][i] is not None:
                f = rouge_l(inp["texts"][i], inp["references"][i], cfg["lampo"]["rouge_max_tokens"])
                r[i] = f32(r[i] + f32(cfg["lampo"]["rouge_beta"]) * f32(f))
                fs.append(f)
        m["shaping/lampo_rouge_mean"] = float(np.mean(fs)) if fs else 0.0
    coll, acr, ac, aw = acr_stats(r, inp["passed"], g, 1e-2)
    ema = acr if state["ema"] is None else 0.9 * state["ema"] + 0.1 * acr
    state["ema"] = ema
    m.update({"shaping/acr": acr, "shaping/acr_ema": ema, "shaping/acr_all_correct": ac,
              "shaping/acr_all_wrong": aw})
    weights = [1.0] * n
    curve = None
    if "curve_rl" in cfg:
        curve = curve_rl(r, g, state["pool"], cfg["curve_rl"]["pool_num"])
    if "tmn" in cfg:
        adv, weights, pr = tmn(r, inp["task_ids"], g, cfg["tmn"])
        if not cfg["tmn"]["difficulty_reweight"]:
            weights, pr = [1.0] * n, 0.0
        m["shaping/tmn_mean_pass_rate"] = pr
    elif "lampo" in cfg and cfg["lampo"]["pairwise"]:
        adv, wm = lampo(r, inp["seq_logp_mean"], g, cfg["lampo"]["temperature"],
                        cfg["lampo"]["normalize_std"])
        m["shaping/lampo_pair_weight_mean"] = wm
    elif curve is not None and cfg["curve_rl"]["advantage"] == "centered":
        adv = curve[1]
    else:
        adv = base_advantages(r, g, estimator)
    if "avspo" in cfg:
        a = cfg["avspo"]
        frac = min(state["step"] / a["threshold_decay_steps"], 1.0)
        tau = a["threshold_init"] + (a["threshold_min"] - a["threshold_init"]) * frac
        active = (not a["adaptive"]) or ema > tau
        m["shaping/avspo_threshold"] = tau
        m["shaping/avspo_active"] = float(active)
        count = 0
        if active:
            v = a["virtual_samples"]
            virt = [a["reward_min"] + (j + 0.5) * (a["reward_max"] - a["reward_min"]) / v
                    for j in range(v)]
            alpha = a["alpha"]
            if a["scale_alpha"]:
                alpha *= min(1.0, ema / tau)
            for gi, c in enumerate(coll):
                if c:
                    adv[gi * g:(gi + 1) * g] = avspo_group(r[gi * g:(gi + 1) * g], virt, alpha)
                    count += 1
        m["shaping/avspo_groups"] = count
    if curve is not None:
        pw, _, w = curve
        weights = [weights[i] * pw[i // g] for i in range(n)]
        m["shaping/curve_rl_weight_mean"] = float(np.mean(pw))
        m["shaping/curve_rl_weight_max"] = float(max(pw))
        m["shaping/curve_rl_nonempty_bins"] = int(np.sum(w > 0))
        m["shaping/curve_rl_pool_size"] = sum(len(b) for b in state["pool"])
    if "edas" in cfg:
        adv, stats = edas(adv, inp["passed"], inp["answers"], g, cfg["edas"])
        m.update(stats)
    offsets = [[] for _ in range(n)]
    if "srar" in cfg:
        offsets = srar_offsets(inp["texts"], inp["judgments"], g, cfg["srar"])
        flat = [o[2] for row in offsets for o in row]
        m["shaping/srar_offset_abs_mean"] = float(np.mean(np.abs(flat))) if flat else 0.0
        m["shaping/srar_outcome_abs_mean"] = float(np.mean(np.abs(adv)))
    state["step"] += 1
    return {"rewards": [float(x) for x in r], "advantages": [float(x) for x in adv],
            "weights": [float(x) for x in weights], "step_offsets": offsets,
            "metrics": {k: float(v) for k, v in m.items()}}


INPUTS = {}


def case(name, config, inputs, estimator="group_std"):
    state = {"step": 0, "ema": None, "pool": []}
    steps = [{"input": key, "expected": apply(config, copy.deepcopy(INPUTS[key]), estimator, state)}
             for key in inputs]
    return {"name": name, "config": config, "estimator": estimator, "steps": steps}


def main():
    INPUTS.update({
        "a": make_input(1, 6, 4, ["mixed", "all1", "mixed", "all0", "mixed", "mixed"]),
        "b": make_input(2, 6, 4, ["all0", "all0", "mixed", "all1", "all0", "mixed"]),
        "c": make_input(3, 6, 4, ["all1", "all0", "all0", "all0", "mixed", "all0"]),
        "ties": make_input(4, 6, 4, ["mixed"] * 6),
        "nonbin": make_input(5, 6, 4, ["rand", "rand", "mixed", "all1", "rand", "rand"]),
        "single": make_input(6, 6, 1, ["rand"] * 6),
        "wide": make_input(7, 4, 8, ["mixed", "all0", "mixed", "all1"]),
    })
    a, b, c, ties, nonbin, single, wide = "a", "b", "c", "ties", "nonbin", "single", "wide"
    cases = [
        case("grpo_only", {}, [a]),
        case("dr_grpo_only", {}, [nonbin], estimator="group_mean"),
        case("avspo_always", {"avspo": {"adaptive": False}}, [a, b]),
        case("avspo_adaptive_scaled", {"avspo": {"scale_alpha": True, "threshold_decay_steps": 2}},
             [a, b, c, a]),
        case("edas_absolute", {"edas": {}}, [a, wide]),
        case("edas_redistribute", {"edas": {"mode": "redistribute"}}, [a, wide]),
        case("avspo_edas", {"avspo": {"adaptive": False}, "edas": {}}, [b, c]),
        case("curve_rl_pool", {"curve_rl": {"pool_num": 2}}, [a, ties, b, c, nonbin]),
        case("curve_rl_base", {"curve_rl": {"advantage": "base", "pool_num": 0}}, [ties, a]),
        case("lampo", {"lampo": {}}, [a, nonbin]),
        case("lampo_std_no_rouge", {"lampo": {"normalize_std": True, "rouge_beta": 0.0,
                                              "temperature": 0.5}}, [nonbin]),
        case("rouge_only", {"lampo": {"pairwise": False, "rouge_beta": 0.3,
                                      "rouge_max_tokens": 5}}, [a]),
        case("tmn", {"tmn": {}}, [a, nonbin]),
        case("tmn_code_defaults", {"tmn": {"smooth_alpha": 0.5, "gamma": 2.0}}, [wide]),
        case("tmn_single_rollout", {"tmn": {}}, [single]),
        case("pow3r", {"pow3r": {}}, [a, nonbin]),
        case("pow3r_contrast_only", {"pow3r": {"lambda": 1.0, "contrast_eps": 0.0,
                                               "gamma": 2.0}}, [ties]),
        case("srar", {"srar": {}}, [a, wide]),
        case("srar_clipped", {"srar": {"offset_clip": 0.5, "format_weight": 0.3}}, [ties]),
        case("tmn_avspo_curve_base_edas", {"tmn": {}, "avspo": {"adaptive": False},
                                           "curve_rl": {"advantage": "base"}, "edas": {}},
             [a, c]),
    ]
    rng = np.random.RandomState(9)
    seq = []
    for batch in range(12):
        for epoch in range(4):
            norm = 1.0 + 0.05 * rng.randn() + (3.0 if (batch, epoch) in [(6, 2), (9, 1)] else 0.0)
            seq.append([float(norm), epoch])
    dgg_cfg = {"threshold": 0.5, "window": 8, "max_reuse": 4}
    rng = np.random.RandomState(11)
    base = [f32(x) for x in rng.randn(7)]
    direction = rng.randn(7)
    cks = [[f32(b + (0.3 * (s + 1) + 0.02 * s * s) * d + 0.05 * e)
            for b, d, e in zip(base, direction, rng.randn(7))] for s in range(6)]
    relex_cases = [{"rank": r, "window": w, "last_step": 6.0, "target_step": 20.0,
                    **relex(base, cks, r, w, 6.0, 20.0)} for r, w in [(1, 0), (2, 0), (1, 3)]]
    out = {"note": "Generated by scripts/reference_shaping.py (numpy float64) from the spec "
                   "formulas; do not edit.",
           "inputs": INPUTS,
           "cases": cases,
           "dgg": {"config": dgg_cfg, "calls": seq, "gates": dgg(seq, dgg_cfg)},
           "relex": {"base": base, "checkpoints": cks, "cases": relex_cases}}
    path = pathlib.Path(__file__).resolve().parent.parent / "tests/fixtures/shaping_golden.json"
    path.write_text(json.dumps(out, separators=(",", ":")).replace('{"input"', '\n{"input"')
                    .replace('{"name"', '\n{"name"') + "\n")
    print(f"wrote {path} ({len(cases)} cases)")


if __name__ == "__main__":
    main()
