//! Just enough JSON for the fixtures of `tests/fixtures/rotary/`: numbers are kept as their
//! text, so that an f32 is read from the shortest decimal the capture wrote (one rounding,
//! never through an f64).

use std::collections::BTreeMap;

#[derive(Debug, Clone)]
pub enum Json {
    Null,
    Bool(bool),
    Number(String),
    Text(String),
    List(Vec<Json>),
    Object(BTreeMap<String, Json>),
}

impl Json {
    pub fn parse(text: &str) -> Json {
        let mut p = Parser {
            s: text.as_bytes(),
            at: 0,
        };
        let v = p.value();
        p.space();
        assert_eq!(p.at, p.s.len(), "trailing text after the JSON value");
        v
    }

    /// The field `key` of an object.
    pub fn get(&self, key: &str) -> &Json {
        match self {
            Json::Object(o) => o.get(key).unwrap_or_else(|| panic!("no field {key:?}")),
            _ => panic!("{key:?}: not an object"),
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Json::Null)
    }

    pub fn list(&self) -> &[Json] {
        match self {
            Json::List(l) => l,
            other => panic!("not a list: {other:?}"),
        }
    }

    pub fn text(&self) -> &str {
        match self {
            Json::Text(t) => t,
            other => panic!("not a string: {other:?}"),
        }
    }

    pub fn f64(&self) -> f64 {
        match self {
            Json::Number(n) => n.parse().unwrap(),
            other => panic!("not a number: {other:?}"),
        }
    }

    pub fn f32(&self) -> f32 {
        match self {
            Json::Number(n) => n.parse().unwrap(),
            other => panic!("not a number: {other:?}"),
        }
    }

    /// A list of numbers, or of lists of them, flattened in order, each as an f32.
    pub fn floats(&self) -> Vec<f32> {
        match self {
            Json::List(l) => l.iter().flat_map(|v| v.floats()).collect(),
            v => vec![v.f32()],
        }
    }
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn space(&mut self) {
        while self.at < self.s.len() && self.s[self.at].is_ascii_whitespace() {
            self.at += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.space();
        let found = self.s.get(self.at) == Some(&c);
        if found {
            self.at += 1;
        }
        found
    }

    fn value(&mut self) -> Json {
        self.space();
        match self.s[self.at] {
            b'{' => {
                self.at += 1;
                let mut o = BTreeMap::new();
                if !self.eat(b'}') {
                    loop {
                        self.space();
                        let Json::Text(k) = self.value() else {
                            panic!("an object's key is a string")
                        };
                        assert!(self.eat(b':'), "':' after a key");
                        o.insert(k, self.value());
                        if self.eat(b'}') {
                            break;
                        }
                        assert!(self.eat(b','), "',' between fields");
                    }
                }
                Json::Object(o)
            }
            b'[' => {
                self.at += 1;
                let mut l = Vec::new();
                if !self.eat(b']') {
                    loop {
                        l.push(self.value());
                        if self.eat(b']') {
                            break;
                        }
                        assert!(self.eat(b','), "',' between items");
                    }
                }
                Json::List(l)
            }
            b'"' => {
                let start = self.at + 1;
                let end = start + self.s[start..].iter().position(|&c| c == b'"').unwrap();
                assert!(
                    !self.s[start..end].contains(&b'\\'),
                    "no escapes in the fixtures"
                );
                self.at = end + 1;
                Json::Text(String::from_utf8(self.s[start..end].to_vec()).unwrap())
            }
            _ => self.word(),
        }
    }

    fn word(&mut self) -> Json {
        let start = self.at;
        while self.at < self.s.len() && !b",]} \n\r\t".contains(&self.s[self.at]) {
            self.at += 1;
        }
        match std::str::from_utf8(&self.s[start..self.at]).unwrap() {
            "null" => Json::Null,
            "true" => Json::Bool(true),
            "false" => Json::Bool(false),
            n => Json::Number(n.to_owned()),
        }
    }
}
