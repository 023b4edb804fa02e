//! Incremental detokenization: the text of a growing list of token ids, cut at the first stop
//! string, released piece by piece for streaming.
//!
//! Text is `Tokenizer::decode_skip_special` of all tokens so far. While a choice runs, the
//! assembler holds back a trailing U+FFFD (an incomplete multi-byte character) and any suffix
//! that could still grow into a stop string, so a streamed stop string is never sent.

use rlvr_models::Tokenizer;

/// The text of one choice, assembled token by token.
#[derive(Debug, Clone, Default)]
pub struct TextAssembler {
    tokens: Vec<u32>,
    stops: Vec<String>,
    emitted: String,
}

impl TextAssembler {
    /// An empty assembler that cuts the text at the first of `stops` (empty strings ignored).
    pub fn new(stops: &[String]) -> Self {
        Self {
            tokens: Vec::new(),
            stops: stops.iter().filter(|s| !s.is_empty()).cloned().collect(),
            emitted: String::new(),
        }
    }

    /// Adds `token` and returns the text that became final (possibly empty).
    pub fn push(&mut self, tokenizer: &Tokenizer, token: u32) -> String {
        self.tokens.push(token);
        let full = self.cut(decode(tokenizer, &self.tokens));
        let mut end = full.len();
        while full[..end].ends_with('\u{FFFD}') {
            end -= '\u{FFFD}'.len_utf8();
        }
        end -= self.pending_stop_prefix(&full[..end]);
        self.release(&full[..end])
    }

    /// Ends the choice and returns the text not released yet.
    pub fn finish(&mut self, tokenizer: &Tokenizer) -> String {
        let full = self.cut(decode(tokenizer, &self.tokens));
        self.release(&full)
    }

    /// The whole text released so far.
    pub fn text(&self) -> &str {
        &self.emitted
    }

    /// `text` up to (not including) the first stop string.
    fn cut(&self, text: String) -> String {
        match self
            .stops
            .iter()
            .filter_map(|s| text.find(s.as_str()))
            .min()
        {
            Some(at) => text[..at].to_owned(),
            None => text,
        }
    }

    /// Length of the longest suffix of `text` that is a proper prefix of a stop string.
    fn pending_stop_prefix(&self, text: &str) -> usize {
        let mut longest = 0;
        for stop in &self.stops {
            for (i, _) in stop.char_indices().skip(1) {
                if i > longest && text.ends_with(&stop[..i]) {
                    longest = i;
                }
            }
        }
        longest
    }

    fn release(&mut self, upto: &str) -> String {
        match upto.strip_prefix(self.emitted.as_str()) {
            Some(new) if !new.is_empty() => {
                let new = new.to_owned();
                self.emitted.push_str(&new);
                new
            }
            // Nothing new, or a decoder that rewrote earlier text: wait for more.
            _ => String::new(),
        }
    }
}

/// The final text of `tokens` (special tokens skipped), cut at the first of `stops`.
pub fn final_text(tokenizer: &Tokenizer, tokens: &[u32], stops: &[String]) -> String {
    let mut assembler = TextAssembler::new(stops);
    assembler.tokens = tokens.to_vec();
    assembler.finish(tokenizer)
}

fn decode(tokenizer: &Tokenizer, tokens: &[u32]) -> String {
    tokenizer.decode_skip_special(tokens).unwrap_or_default()
}

/// How a sampled token is named in log-prob entries: its decoded text (special tokens
/// included), or `token_id:<id>` under vLLM's `return_tokens_as_token_ids`.
pub fn token_string(tokenizer: &Tokenizer, id: u32, as_id: bool) -> String {
    if as_id {
        format!("token_id:{id}")
    } else {
        tokenizer.decode(&[id]).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One token per character of "abc xyz" plus `<eos>` (id 0, special).
    fn tokenizer() -> Tokenizer {
        let json = r#"{"version":"1.0","truncation":null,"padding":null,
          "added_tokens":[{"id":0,"content":"<eos>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}],
          "normalizer":null,
          "pre_tokenizer":{"type":"Split","pattern":{"Regex":"."},"behavior":"Isolated","invert":false},
          "post_processor":null,"decoder":{"type":"Fuse"},
          "model":{"type":"WordLevel","vocab":{"<eos>":0,"a":1,"b":2,"c":3," ":4,"x":5,"y":6,"z":7},"unk_token":"<eos>"}}"#;
        Tokenizer::from_tokenizer(json.parse().unwrap(), None)
    }

    #[test]
    fn stream_holds_back_a_possible_stop_string_and_cuts_at_it() {
        let tok = tokenizer();
        let mut t = TextAssembler::new(&["c x".to_owned()]);
        // "a", "b" are final; "c" and "c " may begin "c x", which "x" completes: the text
        // ends at "ab" and the stop string is never released.
        assert_eq!(t.push(&tok, 1), "a");
        assert_eq!(t.push(&tok, 2), "b");
        assert_eq!(t.push(&tok, 3), "");
        assert_eq!(t.push(&tok, 4), "");
        assert_eq!(t.push(&tok, 5), "");
        assert_eq!(t.finish(&tok), "");
        assert_eq!(t.text(), "ab");
    }

    #[test]
    fn a_broken_stop_prefix_is_released() {
        let tok = tokenizer();
        let mut t = TextAssembler::new(&["cz".to_owned()]);
        assert_eq!(t.push(&tok, 3), ""); // "c" may begin "cz"
        assert_eq!(t.push(&tok, 6), "cy"); // "cy" cannot
        assert_eq!(t.push(&tok, 0), ""); // <eos> is skipped in text
        assert_eq!(t.finish(&tok), "");
        assert_eq!(t.text(), "cy");
    }

    #[test]
    fn token_strings() {
        let tok = tokenizer();
        assert_eq!(token_string(&tok, 5, false), "x");
        assert_eq!(token_string(&tok, 0, false), "<eos>");
        assert_eq!(token_string(&tok, 5, true), "token_id:5");
    }
}
