//! A minimal HTTP/1.1 client for an OpenAI-compatible chat-completions judge (plain `http://`).

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use serde_json::json;

use super::JudgeConfig;

/// Largest judge reply read (bytes).
const MAX_REPLY: u64 = 4 << 20;

/// Instruction sent as the system message; the score is parsed from the reply.
const SYSTEM_PROMPT: &str = "You grade a response against one criterion. Reply with a single \
number between 0 and 1 (1 = fully satisfied, 0 = not at all), and nothing else.";

/// Asks the judge about `response`; returns the score in `[0, 1]` and the judge's raw reply.
pub(super) fn judge(
    cfg: &JudgeConfig,
    question: &str,
    response: &str,
) -> Result<(f64, String), String> {
    let key = cfg
        .api_key
        .clone()
        .or_else(|| cfg.api_key_env.as_ref().and_then(|v| std::env::var(v).ok()));
    let body = json!({
        "model": cfg.model,
        "temperature": 0,
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": format!("Criterion: {question}\n\nResponse:\n{response}")},
        ],
    })
    .to_string();
    let url = format!("{}/chat/completions", cfg.base_url.trim_end_matches('/'));
    let reply = post(
        &url,
        &body,
        key.as_deref(),
        Duration::from_secs_f64(cfg.timeout_s),
    )?;
    let v: serde_json::Value =
        serde_json::from_str(&reply).map_err(|e| format!("judge reply is not JSON: {e}"))?;
    let said = v["choices"][0]["message"]["content"]
        .as_str()
        .ok_or("judge reply has no choices[0].message.content")?
        .trim()
        .to_string();
    Ok((
        parse_score(&said).ok_or_else(|| format!("no score in judge reply {said:?}"))?,
        said,
    ))
}

/// `"0.8"` → 0.8, `"yes"` → 1, `"No."` → 0, `"7/10"` → 0.7, `"8"` (a 0–10 scale) → 0.8.
fn parse_score(said: &str) -> Option<f64> {
    let lower = said.to_ascii_lowercase();
    if lower.starts_with("yes") {
        return Some(1.0);
    }
    if lower.starts_with("no") {
        return Some(0.0);
    }
    let num: String = lower
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == '/')
        .collect();
    let x = match num.split_once('/') {
        Some((a, b)) => a.parse::<f64>().ok()? / b.parse::<f64>().ok()?,
        None => num.parse::<f64>().ok()?,
    };
    let x = if x > 1.0 && x <= 10.0 { x / 10.0 } else { x };
    (0.0..=1.0).contains(&x).then_some(x)
}

/// POSTs JSON to a plain-HTTP URL and returns the response body of a 2xx reply.
fn post(url: &str, body: &str, key: Option<&str>, timeout: Duration) -> Result<String, String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or("judge URL must start with http://")?;
    let (host, path) = rest
        .split_once('/')
        .map_or((rest, "/".to_string()), |(h, p)| (h, format!("/{p}")));
    let addr_text = if host.contains(':') {
        host.to_string()
    } else {
        format!("{host}:80")
    };
    let addr = addr_text
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {host}: {e}"))?
        .next()
        .ok_or_else(|| format!("cannot resolve {host}"))?;
    let mut stream =
        TcpStream::connect_timeout(&addr, timeout).map_err(|e| format!("connect {addr}: {e}"))?;
    stream
        .set_read_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    stream
        .set_write_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    let auth = key
        .map(|k| format!("Authorization: Bearer {k}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n{auth}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|e| format!("send: {e}"))?;
    let mut raw = Vec::new();
    stream
        .take(MAX_REPLY)
        .read_to_end(&mut raw)
        .map_err(|e| format!("read: {e}"))?;
    let text = String::from_utf8_lossy(&raw);
    let (head, payload) = text.split_once("\r\n\r\n").ok_or("malformed HTTP reply")?;
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or("no HTTP status")?;
    if !(200..300).contains(&status) {
        return Err(format!("judge returned HTTP {status}"));
    }
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        return dechunk(payload);
    }
    Ok(payload.to_string())
}

fn dechunk(mut s: &str) -> Result<String, String> {
    let mut out = String::new();
    loop {
        let (size, rest) = s.split_once("\r\n").ok_or("bad chunk")?;
        let n = usize::from_str_radix(size.trim(), 16).map_err(|_| "bad chunk size")?;
        if n == 0 {
            return Ok(out);
        }
        out.push_str(rest.get(..n).ok_or("short chunk")?);
        s = rest.get(n + 2..).ok_or("short chunk")?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_parse() {
        let cases = [
            ("0.8", Some(0.8)),
            ("Yes.", Some(1.0)),
            ("no", Some(0.0)),
            ("7/10", Some(0.7)),
            ("8", Some(0.8)),
            ("banana", None),
            ("42", None),
        ];
        for (s, want) in cases {
            assert_eq!(parse_score(s), want, "{s}");
        }
    }

    #[test]
    fn chunked_bodies_decode() {
        assert_eq!(
            dechunk("4\r\nWiki\r\n5\r\npedia\r\n0\r\n\r\n").unwrap(),
            "Wikipedia"
        );
    }
}
