//! The execution-aware dense code reward (methods-extra §9) on hand-checked programs: every
//! component and the syntax gate, R with the spec's weights, the localized findings and their
//! character spans in the response (fenced block, HumanEval prefix), the traceback line of a
//! test's exception and of a failed load, and a program that tries to forge its diagnostics.
//! Every expected number below is worked out in the comment above it. Needs `python3`.

use rlvr_verifiers::dense::reward::{Components, Counts};
use rlvr_verifiers::dense::spans::{line_span, program_line};
use rlvr_verifiers::{
    CodeConfig, CodeReference, DenseConfig, Outcome, Reference, Verdict, Verifier,
};

fn verifier(dense: DenseConfig) -> Box<dyn Verifier> {
    Box::new(
        CodeConfig {
            timeout_s: 10.0,
            dense: Some(dense),
            ..CodeConfig::default()
        }
        .init()
        .unwrap(),
    )
}

fn tests(list: &[&str]) -> Reference {
    Reference::Code(CodeReference {
        tests: list.iter().map(|s| s.to_string()).collect(),
        ..CodeReference::default()
    })
}

fn close(a: f32, b: f32) -> bool {
    (a - b).abs() < 1e-5
}

fn parts(v: &Verdict) -> Vec<(String, f32)> {
    v.parts.iter().map(|p| (p.name.clone(), p.reward)).collect()
}

fn assert_parts(v: &Verdict, want: [f32; 5]) {
    let names = ["syntax", "func", "style", "security", "exec"];
    let got = parts(v);
    assert_eq!(got.len(), 5, "{got:?}");
    for ((name, value), (n, w)) in got.iter().zip(names.iter().zip(want)) {
        assert_eq!(name, n);
        assert!(close(*value, w), "{name}: {value} != {w}; {:?}", v.details);
    }
}

/// (component, rule, line, char_start, char_end, penalty to 4 decimals) of each penalty span.
fn spans(v: &Verdict) -> Vec<(String, String, usize, usize, usize, f32)> {
    v.penalties
        .iter()
        .map(|p| {
            (
                p.component.clone(),
                p.rule.clone(),
                p.line,
                p.char_start,
                p.char_end,
                (p.penalty * 1e4).round() / 1e4,
            )
        })
        .collect()
}

/// Components from counts, by hand: passed 2/3, 4 lint (L = 10), 1 security (S = 3):
/// func 0.6667, style 1 − 0.4 = 0.6, security 1 − 1/3 = 0.6667, exec 1, syntax 1;
/// R = 0.1 + 0.5·(2/3) + 0.1·0.6 + 0.1·(2/3) + 0.2 = 0.76. The gate zeroes everything;
/// 12 lint and 5 security findings saturate at 0; with all weights 1, R is the mean.
#[test]
fn components_and_gate_by_hand() {
    let cfg = DenseConfig::default();
    let counts = Counts {
        compiles: true,
        passed: 2,
        total: 3,
        lint: 4,
        security: 1,
        ran_to_completion: true,
    };
    let c = Components::from_counts(&counts, &cfg);
    assert!(close(c.func, 2.0 / 3.0) && close(c.style, 0.6) && close(c.security, 2.0 / 3.0));
    assert_eq!((c.syntax, c.exec), (1.0, 1.0));
    assert!(close(c.reward(&cfg), 0.76), "{}", c.reward(&cfg));
    let gated = Components::from_counts(
        &Counts {
            compiles: false,
            ..counts
        },
        &cfg,
    );
    assert_eq!(gated, Components::default());
    assert_eq!(gated.reward(&cfg), 0.0);
    let saturated = Components::from_counts(
        &Counts {
            lint: 12,
            security: 5,
            ran_to_completion: false,
            ..counts
        },
        &cfg,
    );
    assert_eq!(
        (saturated.style, saturated.security, saturated.exec),
        (0.0, 0.0, 0.0)
    );
    // R = 0.1 + 0.5·(2/3) = 0.4333.
    assert!(close(saturated.reward(&cfg), 0.1 + 0.5 * 2.0 / 3.0));
    let flat = DenseConfig {
        w_syntax: 1.0,
        w_func: 1.0,
        w_style: 1.0,
        w_security: 1.0,
        w_exec: 1.0,
        ..cfg.clone()
    };
    // (1 + 2/3 + 0.6 + 2/3 + 1) / 5 = 0.78667.
    assert!(close(
        c.reward(&flat),
        (1.0 + 2.0 / 3.0 + 0.6 + 2.0 / 3.0 + 1.0) / 5.0
    ));
    let strict = DenseConfig {
        lint_scale: 4.0,
        sec_scale: 1.0,
        ..cfg.clone()
    };
    let s = Components::from_counts(&counts, &strict);
    assert_eq!((s.style, s.security), (0.0, 0.0));
    // No test passed: with `require_pass` (default) only r_syntax counts, R = 0.1; without it
    // R = 0.1 + 0.06 + 0.0667 + 0.2 = 0.42667.
    let none = Counts {
        passed: 0,
        ..counts
    };
    let gated = Components::from_counts(&none, &strict);
    assert_eq!(
        (
            gated.syntax,
            gated.func,
            gated.style,
            gated.security,
            gated.exec
        ),
        (1.0, 0.0, 0.0, 0.0, 0.0)
    );
    assert!(close(
        Components::from_counts(&none, &cfg).reward(&cfg),
        0.1
    ));
    let open = DenseConfig {
        require_pass: false,
        ..cfg.clone()
    };
    let ungated = Components::from_counts(&none, &open);
    assert!(close(
        ungated.reward(&open),
        0.1 + 0.1 * 0.6 + 0.1 * 2.0 / 3.0 + 0.2
    ));
}

/// Lines of the program → characters of the response, and source lines past a prefix.
#[test]
fn line_spans_by_hand() {
    let response = "Sure:\n```python\nab\n\ncdé\n```\n";
    let at = response.find("ab").unwrap();
    let body = "ab\n\ncdé\n";
    // "Sure:\n```python\n" is 16 characters: line 1 "ab" = [16, 18); line 2 is empty and
    // covers its newline [19, 20); line 3 "cdé" = [20, 23) (é is one character).
    assert_eq!(line_span(response, at, body, 1), Some((16, 18)));
    assert_eq!(line_span(response, at, body, 2), Some((19, 20)));
    assert_eq!(line_span(response, at, body, 3), Some((20, 23)));
    // Unknown (0) or past the end: the whole program [16, 24).
    assert_eq!(line_span(response, at, body, 0), Some((16, 24)));
    assert_eq!(line_span(response, at, body, 9), Some((16, 24)));
    assert_eq!(line_span(response, at, "", 1), None);
    // A two-line prefix with its newline: source line 3 is program line 1; without the final
    // newline the prefix's last line and program line 1 are one line.
    assert_eq!(program_line(3, "a\nb\n"), Some(1));
    assert_eq!(program_line(2, "a\nb\n"), None);
    assert_eq!(program_line(2, "a\nb"), Some(1));
    assert_eq!(program_line(0, "a\n"), Some(0));
}

/// A clean, correct program: every component 1, R = 1, no penalties.
#[test]
fn clean_program_scores_one() {
    let v = verifier(DenseConfig::default()).verify(
        "Here:\n```python\ndef add(a, b):\n    return a + b\n```\n",
        &tests(&["assert add(1, 2) == 3", "assert add(0, 0) == 0"]),
    );
    assert_parts(&v, [1.0; 5]);
    assert_eq!(v.reward, 1.0);
    assert!(v.passed && v.penalties.is_empty(), "{:?}", v.penalties);
}

/// A syntax error on line 2: the gate zeroes R and every component, the tests are not run,
/// and the one penalty is −κ·w_syntax = −0.1 on "    return a +", characters [25, 39)
/// ("```python\n" is 10 characters, "def add(a, b):\n" 15).
#[test]
fn syntax_error_is_gated_and_located() {
    let v = verifier(DenseConfig::default()).verify(
        "```python\ndef add(a, b):\n    return a +\n```",
        &tests(&["assert add(1, 2) == 3"]),
    );
    assert_parts(&v, [0.0; 5]);
    assert_eq!((v.reward, v.outcome), (0.0, Outcome::Crashed));
    assert_eq!(
        spans(&v),
        vec![("syntax".into(), "SyntaxError".into(), 2, 25, 39, -0.1)]
    );
    // κ scales it; κ = 0 keeps the reward and drops the spans.
    let k = verifier(DenseConfig {
        kappa: 2.5,
        ..DenseConfig::default()
    })
    .verify(
        "```python\ndef add(a, b):\n    return a +\n```",
        &tests(&["assert add(1, 2) == 3"]),
    );
    assert!(close(k.penalties[0].penalty, -0.25));
    let off = verifier(DenseConfig {
        kappa: 0.0,
        ..DenseConfig::default()
    })
    .verify(
        "```python\ndef add(a, b):\n    return a +\n```",
        &tests(&["assert add(1, 2) == 3"]),
    );
    assert!(off.penalties.is_empty() && off.reward == 0.0);
}

/// Style and security findings, each on its line:
/// line 1 `import os` (never used: F401), line 3 `    x=1` (E225 no spaces around `=`, and
/// F841 `x` never read), line 4 `eval` (B307). n_lint = 3, n_sec = 1: style 0.7, security
/// 2/3; the tests pass: R = 0.1 + 0.5 + 0.07 + 0.1·(2/3) + 0.2 = 0.93667. Four penalties of
/// −0.1 each. The program starts at character 10 (after "```python\n"); line 1 "import os"
/// = [10, 19); line 2 "def add(a, b):" (14 characters) = [20, 34); line 3 "    x=1" =
/// [35, 42); line 4 `    return eval("a + b")` (24 characters) = [43, 67).
#[test]
fn style_and_security_findings_by_hand() {
    let response = "```python\nimport os\ndef add(a, b):\n    x=1\n    return eval(\"a + b\")\n```";
    let v = verifier(DenseConfig::default()).verify(response, &tests(&["assert add(1, 2) == 3"]));
    assert_parts(&v, [1.0, 1.0, 0.7, 2.0 / 3.0, 1.0]);
    assert!(
        close(v.reward, 0.1 + 0.5 + 0.07 + 0.1 * 2.0 / 3.0 + 0.2),
        "{}",
        v.reward
    );
    assert_eq!(
        spans(&v),
        vec![
            ("style".into(), "F401".into(), 1, 10, 19, -0.1),
            ("style".into(), "E225".into(), 3, 35, 42, -0.1),
            ("style".into(), "F841".into(), 3, 35, 42, -0.1),
            ("security".into(), "B307".into(), 4, 43, 67, -0.1),
        ]
    );
    // L and S are live: L = 3 makes style 0, S = 1 makes security 0: R = 0.1 + 0.5 + 0.2.
    let strict = verifier(DenseConfig {
        lint_scale: 3.0,
        sec_scale: 1.0,
        ..DenseConfig::default()
    })
    .verify(response, &tests(&["assert add(1, 2) == 3"]));
    assert!(close(strict.reward, 0.8), "{}", strict.reward);
}

/// Each rule of the two sets fires on its line (one program per rule), and none fires on
/// its clean twin.
#[test]
fn every_rule_fires_on_its_line() {
    let v = verifier(DenseConfig {
        max_line_length: 20,
        ..DenseConfig::default()
    });
    let t = tests(&["assert True"]);
    let cases: [(&str, &str, &str); 12] = [
        (
            "E501",
            "y = 1\nlong_name_here = 12345678\n",
            "y = 1\nshort = 12\n",
        ),
        ("E225", "y = 1\nz=y\n", "y = 1\nz = y\n"),
        ("E711", "y = 1\nq = y == None\n", "y = 1\nq = y is None\n"),
        (
            "E712",
            "y = 1\nq = y != True\n",
            "y = 1\nq = y is not True\n",
        ),
        (
            "E722",
            "try:\n    pass\nexcept:\n    pass\n",
            "try:\n    pass\nexcept ValueError:\n    pass\n",
        ),
        (
            "F401",
            "import math\nimport os\nq = math.pi\n",
            "import math\nq = math.pi\n",
        ),
        (
            "F841",
            "def f():\n    unused = 1\n    return 2\n",
            "def f():\n    used = 1\n    return used\n",
        ),
        ("B307", "q = 1\nr = exec('q')\n", "q = 1\nr = str(q)\n"),
        (
            "B605",
            "import os\nos.system('true')\n",
            "import os\nq = os.sep\n",
        ),
        (
            "B602",
            "import subprocess\nsubprocess.run('x', shell=True)\n",
            "import subprocess\nq = subprocess.PIPE\n",
        ),
        (
            "B301",
            "import pickle\npickle.loads(b'')\n",
            "import pickle\nq = pickle.dumps(1)\n",
        ),
        (
            "B105",
            "x = 1\napi_token = 'abc'\n",
            "x = 1\napi_token = x\n",
        ),
    ];
    for (rule, bad, good) in cases {
        let got = v.verify(bad, &t);
        let lines: Vec<usize> = got
            .penalties
            .iter()
            .filter(|p| p.rule == rule)
            .map(|p| p.line)
            .collect();
        let want = if rule == "E722" { 3 } else { 2 };
        assert_eq!(lines, vec![want], "{rule}: {:?}", spans(&got));
        let clean = v.verify(good, &t);
        assert!(
            clean.penalties.iter().all(|p| p.rule != rule),
            "{rule} on its clean twin: {:?}",
            spans(&clean)
        );
    }
    let dunder = v.verify("q = 1\nm = __import__('os')\n", &t);
    assert!(
        dunder
            .penalties
            .iter()
            .any(|p| p.rule == "B403" && p.line == 2)
    );
}

/// A test that fails on an exception of the program: func 1/2, exec 0, one penalty of
/// −κ·w_exec = −0.2 on line 2 (`    return a // b`, characters [15, 32) of the bare response).
/// R = 0.1 + 0.25 + 0.1 + 0.1 + 0 = 0.55.
#[test]
fn traceback_line_is_located() {
    let v = verifier(DenseConfig::default()).verify(
        "def div(a, b):\n    return a // b\n",
        &tests(&["assert div(4, 2) == 2", "assert div(1, 0) == 0"]),
    );
    assert_parts(&v, [1.0, 0.5, 1.0, 1.0, 0.0]);
    assert!(close(v.reward, 0.55), "{}", v.reward);
    assert_eq!(
        spans(&v),
        vec![("exec".into(), "traceback".into(), 2, 15, 32, -0.2)]
    );
    // A wrong value is not an execution failure: exec stays 1 (R = 0.1 + 0.25 + 0.4 = 0.75).
    let wrong = verifier(DenseConfig::default()).verify(
        "def div(a, b):\n    return 0\n",
        &tests(&["assert div(4, 2) == 2", "assert div(1, 1) == 0"]),
    );
    assert_parts(&wrong, [1.0, 0.5, 1.0, 1.0, 1.0]);
    assert!(wrong.penalties.is_empty());
}

/// A program that fails while loading (NameError on line 2): no test runs (func 0), exec 0,
/// the penalty on line 2 ("Y = Z", characters [6, 11)); no test passed, so style and security
/// are gated too: R = r_syntax = 0.1 (0.3 with `require_pass = false`).
#[test]
fn load_error_line_is_located() {
    let v = verifier(DenseConfig::default()).verify("X = 1\nY = Z\n", &tests(&["assert X == 1"]));
    assert_parts(&v, [1.0, 0.0, 0.0, 0.0, 0.0]);
    assert!(close(v.reward, 0.1), "{}", v.reward);
    let open = verifier(DenseConfig {
        require_pass: false,
        ..DenseConfig::default()
    })
    .verify("X = 1\nY = Z\n", &tests(&["assert X == 1"]));
    assert_parts(&open, [1.0, 0.0, 1.0, 1.0, 0.0]);
    assert!(close(open.reward, 0.3), "{}", open.reward);
    assert_eq!(
        spans(&v),
        vec![("exec".into(), "traceback".into(), 2, 6, 11, -0.2)]
    );
}

/// With a HumanEval-style prefix the analyzed source is prefix + response; findings are
/// located in the response (source line 2 = response line 1), and the prefix's own findings
/// (`import os` unused, line 1) are not the policy's: not counted, not located.
/// Response line 1 "    return x==None" has E225 and E711: style 0.8, R = 0.98.
#[test]
fn prefix_lines_are_not_the_policys() {
    let r = Reference::Code(CodeReference {
        prefix: "import os\ndef f(x):\n".into(),
        tests: vec!["assert f(None) is True".into()],
        ..CodeReference::default()
    });
    let v = verifier(DenseConfig::default()).verify("    return x==None\n", &r);
    assert_parts(&v, [1.0, 1.0, 0.8, 1.0, 1.0]);
    assert!(close(v.reward, 0.98), "{}", v.reward);
    assert_eq!(
        spans(&v),
        vec![
            ("style".into(), "E225".into(), 1, 0, 18, -0.1),
            ("style".into(), "E711".into(), 1, 0, 18, -0.1),
        ]
    );
}

/// Forging: the program prints the analyzer's "all clean" report and fake checker lines to
/// stdout and stderr, and carries the report in a string literal; its diagnostics are
/// unchanged (line 5's `eval` is still B307, line 1's unused `sys` still F401), so
/// style 0.9, security 2/3, the tests pass: R = 0.1 + 0.5 + 0.09 + 0.0667 + 0.2 = 0.95667.
/// Writing the fake report to the checker's reply channel (fd 4) is a protocol violation:
/// func drops to 0, so no test passed and the `require_pass` gate leaves R = r_syntax = 0.1,
/// never up.
#[test]
fn program_cannot_forge_its_diagnostics() {
    let fake = r#"{"syntax": null, "findings": []}"#;
    let program = |fd_write: &str| {
        format!(
            "import os, sys\nFAKE = '{fake}'\nprint(FAKE)\n{fd_write}\ndef add(a, b):\n    return eval('a + b')\n"
        )
    };
    let stdout_only = program("os.write(2, (FAKE + '\\n0 tb 0 0\\n').encode())");
    let v =
        verifier(DenseConfig::default()).verify(&stdout_only, &tests(&["assert add(1, 2) == 3"]));
    assert_parts(&v, [1.0, 1.0, 0.9, 2.0 / 3.0, 1.0]);
    assert!(
        close(v.reward, 0.1 + 0.5 + 0.09 + 0.1 * 2.0 / 3.0 + 0.2),
        "{}",
        v.reward
    );
    let rules: Vec<(String, usize)> = v
        .penalties
        .iter()
        .map(|p| (p.rule.clone(), p.line))
        .collect();
    assert_eq!(rules, vec![("F401".into(), 1), ("B307".into(), 6)]);
    let channel = program("os.write(4, (FAKE + '\\n').encode())");
    let c = verifier(DenseConfig::default()).verify(&channel, &tests(&["assert add(1, 2) == 3"]));
    assert_parts(&c, [1.0, 0.0, 0.0, 0.0, 0.0]);
    assert!(close(c.reward, 0.1), "{}", c.reward);
}

/// Refusals name the key: a negative weight, L < 1, all-zero weights, the remote backend,
/// `all_or_nothing`.
#[test]
fn bad_dense_configs_are_refused() {
    let err = |c: CodeConfig| c.init().unwrap_err().to_string();
    let with = |d: DenseConfig| CodeConfig {
        dense: Some(d),
        ..CodeConfig::default()
    };
    assert!(
        err(with(DenseConfig {
            w_style: -1.0,
            ..DenseConfig::default()
        }))
        .contains("verifier.dense.w_style")
    );
    assert!(
        err(with(DenseConfig {
            lint_scale: 0.5,
            ..DenseConfig::default()
        }))
        .contains("verifier.dense.lint_scale")
    );
    assert!(
        err(with(DenseConfig {
            kappa: f32::NAN,
            ..DenseConfig::default()
        }))
        .contains("verifier.dense.kappa")
    );
    let zero = DenseConfig {
        w_syntax: 0.0,
        w_func: 0.0,
        w_style: 0.0,
        w_security: 0.0,
        w_exec: 0.0,
        ..DenseConfig::default()
    };
    assert!(err(with(zero)).contains("verifier.dense"));
    let remote = CodeConfig {
        backend: rlvr_verifiers::CodeBackend::SandboxFusion,
        sandbox_url: Some("http://127.0.0.1:9".into()),
        ..with(DenseConfig::default())
    };
    assert!(err(remote).contains("verifier.dense"));
    let aon = CodeConfig {
        reward: rlvr_verifiers::RewardMode::AllOrNothing,
        ..with(DenseConfig::default())
    };
    assert!(err(aon).contains("verifier.dense"));
    let toml_err = toml::from_str::<CodeConfig>("[dense]\nweight = 1").unwrap_err();
    assert!(toml_err.to_string().contains("weight"));
}

/// The hole `require_pass` closes: a program that does nothing must not earn more than
/// r_syntax. Without the gate it earns syntax + style + security + exec = 0.1 + 0.1 + 0.1 + 0.2
/// = 0.5, because the tests' `NameError` is raised in the test, not in the program; a program
/// that defines the function but returns a wrong value also earns only 0.1.
#[test]
fn an_empty_program_earns_no_more_than_compiling() {
    let t = tests(&["assert add(1, 2) == 3"]);
    let v = verifier(DenseConfig::default()).verify("```python\npass\n```", &t);
    assert!(close(v.reward, 0.1), "empty program: R = {}", v.reward);
    let wrong =
        verifier(DenseConfig::default()).verify("```python\ndef add(a, b):\n    return 0\n```", &t);
    assert!(
        close(wrong.reward, 0.1),
        "wrong program: R = {}",
        wrong.reward
    );
    let open = verifier(DenseConfig {
        require_pass: false,
        ..DenseConfig::default()
    })
    .verify("```python\npass\n```", &t);
    assert!(close(open.reward, 0.5), "ungated: R = {}", open.reward);
}
