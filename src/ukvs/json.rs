//! JSON in, JSON out: header values and OSLJ blocks are read as JSON5 and
//! always written as compact strict JSON.
//!
//! Most inputs are our own strict JSON, so serde_json is tried first; the
//! json5 crate (slower, and only needed for hand-written files like the
//! spec's examples with unquoted keys and single quotes) runs only when
//! strict parsing fails. This is the only module that touches json5.
//!
//! Both readers refuse what has no faithful strict-JSON form or would be
//! lost on the way through a [`Value`]: two members of one object with the
//! same name (a `Value` keeps only the last), lone surrogate escapes,
//! bytes that are not UTF-8, and JSON5's `Infinity` and `NaN`. Numbers of
//! strict JSON keep their exact text (serde_json's `arbitrary_precision`),
//! so integers beyond 64 bits survive a rewrite.
//!
//! | function | used by | cost |
//! |---|---|---|
//! | [`parse_json5`] | expansion, `cat`, headers | builds a `Value` |
//! | [`check_json5`] | `validate` on every OSLJ | one pass, no allocation, for strict JSON without `\u` |
//!
//! Both accept and refuse exactly the same texts: `check_json5` takes its
//! shortcut only when it has seen that a full parse could not fail for a
//! reason the shortcut does not check.

use std::borrow::Cow;

use memchr::memchr2;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Parses JSON or JSON5 text. The error message is the JSON5 parser's when
/// both fail (it is the more permissive grammar, so its complaint is the
/// one that matters).
pub fn parse_json5(text: &[u8]) -> Result<Value, String> {
    match serde_json::from_slice::<Value>(text) {
        // serde_json keeps the last of two equal member names; the scan
        // (on text now known to be strict JSON) refuses them instead.
        Ok(v) => Members::default().scan(text, &mut |_| {}).map(|_| v),
        // The json5 parser recurses without a limit; text that strict
        // parsing found too deep is not handed to it.
        Err(e) if e.to_string().starts_with("recursion limit exceeded") => Err(too_deep()),
        Err(_) => parse_json5_only(text),
    }
}

/// Deepest nesting of arrays and objects accepted (serde_json's limit).
const MAX_DEPTH: usize = 127;

fn too_deep() -> String {
    format!("arrays and objects nested deeper than {MAX_DEPTH} levels")
}

/// The JSON5 reader, for text that is not strict JSON.
fn parse_json5_only(text: &[u8]) -> Result<Value, String> {
    let s = std::str::from_utf8(text).map_err(|e| format!("not UTF-8: {e}"))?;
    // Brackets inside strings count too: an overestimate that only
    // matters for text that is very deep already.
    let mut depth = 0usize;
    for &b in text {
        match b {
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(too_deep());
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    let mut de = json5::Deserializer::from_str(s).map_err(|e| json5_message(&e))?;
    Json5Value
        .deserialize(&mut de)
        .map_err(|e| json5_message(&e))
}

/// A one-line message from a json5 error: its parser renders a multi-line
/// picture of the input whose last part says what was expected; errors
/// raised while building the value are one line already.
fn json5_message(e: &json5::Error) -> String {
    let json5::Error::Message { msg, location } = e;
    let what = if msg.contains('\n') {
        msg.rsplit("= ").next().unwrap_or(msg).trim()
    } else {
        msg.trim()
    };
    match location {
        Some(l) => format!("at column {} of the JSON: {what}", l.column),
        None => what.to_owned(),
    }
}

/// Checks that `text` is one JSON(5) value, exactly as [`parse_json5`]
/// would judge it, and hands each member name of the top-level object to
/// `top` (for the field/OSLJ clash check of `validate`; a name may be
/// handed out twice when the check has to start over the long way).
///
/// The common case, a flat object of strict JSON in ASCII without `\u`
/// escapes, costs one serde_json pass that reads the top-level names and
/// skips the values unparsed, without allocating once `scratch` has
/// grown; nested objects add one scan for their names. Anything else
/// (JSON5, `\u` escapes, bytes beyond ASCII that are not UTF-8, any
/// error) goes through `parse_json5`, so the verdict and the message are
/// the same.
pub(crate) fn check_json5<F: FnMut(&str)>(
    text: &[u8],
    scratch: &mut Members,
    top: &mut F,
) -> Result<(), String> {
    // Skipped values are neither decoded (a lone surrogate escape would
    // pass) nor checked for UTF-8: text that needs either goes the long
    // way.
    let plain = !has_unicode_escape(text) && (text.is_ascii() || std::str::from_utf8(text).is_ok());
    if plain {
        let mut de = serde_json::Deserializer::from_slice(text);
        let pass = TopLevel {
            members: &mut *scratch,
            top: &mut *top,
        }
        .deserialize(&mut de)
        .and_then(|()| de.end());
        if pass.is_ok() {
            // Names inside nested objects need the scan; it also measures
            // the depth, which the skip does not limit and a full parse
            // does.
            let nested = text
                .get(1..)
                .is_some_and(|t| memchr2(b'{', b'[', t).is_some());
            if !nested || scratch.scan(text, &mut |_| {})? < MAX_DEPTH {
                return Ok(());
            }
        }
    }
    if let Value::Object(members) = parse_json5(text)? {
        for name in members.keys() {
            top(name);
        }
    }
    Ok(())
}

/// Whether `text` may hold a `\u` escape (a backslash followed by `u`;
/// an escaped backslash before a `u` counts too, which only costs time).
fn has_unicode_escape(text: &[u8]) -> bool {
    memchr::memchr_iter(b'\\', text).any(|i| text.get(i + 1) == Some(&b'u'))
}

/// The fast pass of [`check_json5`]: the names of the top-level object's
/// members are checked for repeats and handed to `top`; every value is
/// skipped unparsed (`IgnoredAny`, which allocates nothing).
struct TopLevel<'a, F: ?Sized> {
    members: &'a mut Members,
    top: &'a mut F,
}

impl<'de, F: FnMut(&str) + ?Sized> DeserializeSeed<'de> for TopLevel<'_, F> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, F: FnMut(&str) + ?Sized> Visitor<'de> for TopLevel<'_, F> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    // A top-level value that is not an object has no names to check.
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.members.names.clear();
        self.members.spans.clear();
        while map
            .next_key_seed(TopName {
                members: &mut *self.members,
                top: &mut *self.top,
            })?
            .is_some()
        {
            map.next_value::<IgnoredAny>()?;
        }
        self.members.close(0).map_err(de::Error::custom)
    }
}

/// One member name of the top-level object, borrowed from the text (or
/// from serde_json's scratch buffer when it holds escapes).
struct TopName<'a, F: ?Sized> {
    members: &'a mut Members,
    top: &'a mut F,
}

impl<'de, F: FnMut(&str) + ?Sized> DeserializeSeed<'de> for TopName<'_, F> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de, F: FnMut(&str) + ?Sized> Visitor<'de> for TopName<'_, F> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<(), E> {
        self.members.add(0, name.as_bytes()).map_err(E::custom)?;
        (self.top)(name);
        Ok(())
    }
}

/// Past this many members an object's names are checked by sorting them
/// when it closes instead of comparing each new name with all before it.
const LINEAR_MEMBERS: usize = 32;

/// Marks an array on the container stack of [`Members::scan`].
const ARRAY: usize = usize::MAX;

/// The reusable buffers of the member-name scan: after the first few
/// lines, checking an OSLJ allocates nothing.
#[derive(Debug, Default)]
pub(crate) struct Members {
    /// The names of the members of every open object, decoded, end to end.
    names: Vec<u8>,
    /// `(start, end)` of each name in `names`.
    spans: Vec<(usize, usize)>,
    /// One entry per open container: for an object the index in `spans`
    /// where its members start, [`ARRAY`] for an array.
    open: Vec<usize>,
    /// Scratch for the sort of a large object's names.
    order: Vec<usize>,
}

impl Members {
    /// Refuses two members with the same name in any one object of `text`
    /// and hands the names of the top-level object's members to `top`.
    ///
    /// `text` must be strict JSON (the caller has parsed or skimmed it):
    /// then a string followed by `:` is a member name, and brackets outside
    /// strings open and close containers. On other input the result means
    /// nothing, but the scan stays in bounds and ends. Returns the
    /// deepest nesting seen.
    pub(crate) fn scan(&mut self, text: &[u8], top: &mut dyn FnMut(&str)) -> Result<usize, String> {
        self.names.clear();
        self.spans.clear();
        self.open.clear();
        let mut deepest = 0;
        let mut i = 0;
        while let Some(&b) = text.get(i) {
            match b {
                b'{' | b'[' => {
                    self.open
                        .push(if b == b'{' { self.spans.len() } else { ARRAY });
                    deepest = deepest.max(self.open.len());
                }
                b'}' | b']' => {
                    if let Some(start) = self.open.pop() {
                        if start != ARRAY {
                            self.close(start)?;
                        }
                    }
                }
                b'"' => {
                    let (end, escaped) = string_end(text, i + 1);
                    let mut j = end + 1;
                    while matches!(text.get(j), Some(b' ' | b'\t' | b'\n' | b'\r')) {
                        j += 1;
                    }
                    if text.get(j) == Some(&b':') {
                        let raw = text.get(i..=end).unwrap_or_default();
                        self.member(raw, escaped, top)?;
                    }
                    i = j;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
        Ok(deepest)
    }

    /// Adds one member name (`quoted` with its quotes) to the innermost
    /// open object, refusing it if that object has it already.
    fn member(
        &mut self,
        quoted: &[u8],
        escaped: bool,
        top: &mut dyn FnMut(&str),
    ) -> Result<(), String> {
        let Some(&start) = self.open.last().filter(|&&s| s != ARRAY) else {
            return Ok(());
        };
        let name: Cow<'_, [u8]> = if escaped {
            // Rare: decode so that `"a"` and `"\u0061"` compare equal.
            let s: String = serde_json::from_slice(quoted).map_err(|e| e.to_string())?;
            Cow::Owned(s.into_bytes())
        } else {
            Cow::Borrowed(
                quoted
                    .get(1..quoted.len().saturating_sub(1))
                    .unwrap_or_default(),
            )
        };
        self.add(start, &name)?;
        if self.open.len() == 1 {
            if let Ok(s) = std::str::from_utf8(&name) {
                top(s);
            }
        }
        Ok(())
    }

    /// Adds `name` to the object whose members start at `spans[start]`,
    /// refusing it if that object has it already (checked here for small
    /// objects, by [`Members::close`] for large ones).
    fn add(&mut self, start: usize, name: &[u8]) -> Result<(), String> {
        let mine = self.spans.get(start..).unwrap_or_default();
        // Length and first byte first: most names differ there, and a
        // call to `memcmp` costs more than these short names.
        let same = |&(s, e): &(usize, usize)| {
            e - s == name.len()
                && self.names.get(s) == name.first()
                && self.names.get(s..e) == Some(name)
        };
        if mine.len() < LINEAR_MEMBERS && mine.iter().any(same) {
            return Err(twice(name));
        }
        let s = self.names.len();
        self.names.extend_from_slice(name);
        self.spans.push((s, self.names.len()));
        Ok(())
    }

    /// Closes the object whose members start at `spans[start]`: checks a
    /// large one by sorting its names, then forgets them.
    fn close(&mut self, start: usize) -> Result<(), String> {
        let spans = self.spans.get(start..).unwrap_or_default();
        if spans.len() > LINEAR_MEMBERS {
            let names = &self.names;
            let name = |i: usize| names.get(spans[i].0..spans[i].1).unwrap_or_default();
            self.order.clear();
            self.order.extend(0..spans.len());
            self.order.sort_unstable_by(|&a, &b| name(a).cmp(name(b)));
            if let Some(w) = self.order.windows(2).find(|w| name(w[0]) == name(w[1])) {
                return Err(twice(name(w[0])));
            }
        }
        if let Some(&(s, _)) = self.spans.get(start) {
            self.names.truncate(s);
        }
        self.spans.truncate(start);
        Ok(())
    }
}

/// The message for a repeated member name.
fn twice(name: &[u8]) -> String {
    format!(
        "member `{}` appears twice in one object",
        String::from_utf8_lossy(name)
    )
}

/// Position of the closing quote of the string whose text starts at
/// `from`, and whether the string holds a backslash (the end of `text` if
/// it is not closed).
fn string_end(text: &[u8], from: usize) -> (usize, bool) {
    let mut i = from;
    let mut escaped = false;
    loop {
        let Some(j) = text.get(i..).and_then(|rest| memchr2(b'"', b'\\', rest)) else {
            return (text.len(), escaped);
        };
        if text[i + j] == b'"' {
            return (i + j, escaped);
        }
        // Skipping the escaped byte is enough: the hex digits of a `\u`
        // are neither quotes nor backslashes.
        escaped = true;
        i += j + 2;
    }
}

/// Builds a [`Value`] from the json5 deserializer, refusing what a `Value`
/// would silently change: a repeated member name (last one kept) and
/// `Infinity`/`NaN` (turned into `null`).
struct Json5Value;

impl<'de> DeserializeSeed<'de> for Json5Value {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Json5Value {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON5 value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Number::from_f64(v).map(Value::Number).ok_or_else(|| {
            let what = match v {
                v if v.is_nan() => "NaN",
                v if v > 0.0 => "Infinity",
                _ => "-Infinity",
            };
            E::custom(format!(
                "{what} has no strict JSON form (write it as a string or leave it out)"
            ))
        })
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(Json5Value)? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(name) = map.next_key::<String>()? {
            if out.contains_key(&name) {
                return Err(de::Error::custom(twice(name.as_bytes())));
            }
            let v = map.next_value_seed(Json5Value)?;
            out.insert(name, v);
        }
        Ok(Value::Object(out))
    }
}

/// Compact strict JSON (`{"a":1}`), the form every writer here emits.
pub fn to_compact(value: &Value) -> String {
    // Serialising a `Value` cannot fail: its keys are strings already.
    serde_json::to_string(value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_json5_forms_of_the_spec() {
        let v = parse_json5(br#"{keys: ["surt"], values: ['frequency',],}"#).unwrap();
        assert_eq!(v, json!({"keys": ["surt"], "values": ["frequency"]}));
        assert_eq!(
            to_compact(&v),
            r#"{"keys":["surt"],"values":["frequency"]}"#
        );
    }

    #[test]
    fn nested_objects_and_unicode_escapes() {
        let v = parse_json5(br#"{datetime: {'2014': "20~/10", n: {deep: [1, {x: '\u00e9\"'}]}}}"#)
            .unwrap();
        assert_eq!(v["datetime"]["n"]["deep"][1]["x"], json!("é\""));
        assert_eq!(
            to_compact(&v),
            r#"{"datetime":{"2014":"20~/10","n":{"deep":[1,{"x":"é\""}]}}}"#
        );
    }

    #[test]
    fn keeps_member_order() {
        let v = parse_json5(br#"{z: 1, a: 2}"#).unwrap();
        assert_eq!(to_compact(&v), r#"{"z":1,"a":2}"#);
    }

    #[test]
    fn rejects_garbage() {
        assert_eq!(
            parse_json5(b"{a: }"),
            Err(
                "at column 5 of the JSON: expected array, boolean, null, number, object, or string"
                    .into()
            )
        );
        assert!(check(b"{\"a\":1} x").is_err());
        assert!(check(b"{\"a\":1}").is_ok());
        assert!(check(b"{a:1,}").is_ok());
    }

    /// `check_json5` with fresh buffers; the top-level names it handed out.
    fn check(text: &[u8]) -> Result<Vec<String>, String> {
        let mut names = Vec::new();
        check_json5(text, &mut Members::default(), &mut |n: &str| {
            if !names.iter().any(|m| m == n) {
                names.push(n.to_owned());
            }
        })?;
        Ok(names)
    }

    #[test]
    fn repeated_member_names_are_refused_at_any_depth() {
        for text in [
            &br#"{"a":1,"a":2}"#[..],
            br#"{"x":{"b":[{"c":1,"d":2,"c":3}]}}"#,
            br#"{"a":1,"\u0061":2}"#,
            br#"{a: 1, 'a': 2}"#,
            br#"{"a":1, b: {c: 1, c: 2}}"#,
        ] {
            let t = String::from_utf8_lossy(text);
            let want = if t.contains('c') { "`c`" } else { "`a`" };
            let e = parse_json5(text).unwrap_err();
            assert!(e.contains(want) && e.contains("appears twice"), "{t}: {e}");
            let e = check(text).unwrap_err();
            assert!(e.contains(want) && e.contains("appears twice"), "{t}: {e}");
        }
        // Equal names in different objects, or a name equal to a value,
        // are fine.
        let ok = br#"{"a":{"a":1},"b":[{"a":2},{"a":3}],"c":"a","d":{"e":"x","f":{"e":1}}}"#;
        assert!(parse_json5(ok).is_ok());
        assert_eq!(check(ok).unwrap(), ["a", "b", "c", "d"]);
    }

    #[test]
    fn large_objects_are_checked_by_sorting() {
        let mut text = String::from("{");
        for i in 0..200 {
            text.push_str(&format!("\"k{i}\":{i},"));
        }
        text.push_str("\"k7\":0}");
        assert!(check(text.as_bytes()).unwrap_err().contains("`k7`"));
        assert!(parse_json5(text.as_bytes()).is_err());
        let fine = text.replace("\"k7\":0", "\"k200\":0");
        assert_eq!(check(fine.as_bytes()).unwrap().len(), 201);
    }

    #[test]
    fn lone_surrogates_and_bad_utf8_are_refused() {
        for text in [
            &br#"{"a":"\ud800"}"#[..],
            br#"{"a":"\udc00x"}"#,
            br#"{"\ud800":1}"#,
            br#"{a: '\ud800'}"#,
            b"{\"a\":\"\xff\"}",
            b"{\"a\xc3\":1}",
        ] {
            let t = String::from_utf8_lossy(text);
            assert!(parse_json5(text).is_err(), "{t}");
            assert!(check(text).is_err(), "{t}");
        }
        // A pair is one character; UTF-8 as such is fine.
        assert_eq!(parse_json5(br#"{"a":"\ud83d\ude00"}"#).unwrap()["a"], "😀");
        assert_eq!(check("{\"é\":\"☺\"}".as_bytes()).unwrap(), ["é"]);
    }

    #[test]
    fn numbers_keep_their_text_and_infinity_is_refused() {
        let big =
            br#"{"n":123456789012345678901234567890,"m":-18446744073709551617,"f":1.50,"e":1e400}"#;
        // Exponents gain their sign; digits are kept as they are.
        assert_eq!(
            to_compact(&parse_json5(big).unwrap()),
            String::from_utf8_lossy(big).replace("1e400", "1e+400")
        );
        assert!(check(big).is_ok());
        for text in [&b"{a: Infinity}"[..], b"{a: -Infinity}", b"{a: NaN}"] {
            let e = parse_json5(text).unwrap_err();
            assert!(e.contains("no strict JSON form"), "{e}");
            assert!(check(text).is_err());
        }
    }

    #[test]
    fn deep_nesting_is_refused_without_recursing_away() {
        let deep = |n: usize| format!("{{\"a\":{}1{}}}", "[".repeat(n), "]".repeat(n));
        assert!(parse_json5(deep(100).as_bytes()).is_ok());
        assert!(check(deep(100).as_bytes()).is_ok());
        for n in [200, 100_000] {
            let e = parse_json5(deep(n).as_bytes()).unwrap_err();
            assert!(e.contains("nested deeper"), "{e}");
            assert!(check(deep(n).as_bytes()).is_err());
            // The JSON5 road (unquoted name) too.
            let j5 = deep(n).replacen("\"a\"", "a", 1);
            assert!(parse_json5(j5.as_bytes()).is_err());
        }
    }
}
