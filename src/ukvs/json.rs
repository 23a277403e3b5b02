//! JSON in, JSON out: header values and OSLJ blocks are read as JSON5 and
//! always written as compact strict JSON.
//!
//! Most inputs are our own strict JSON, so serde_json is tried first; the
//! json5 crate (slower, and only needed for hand-written files like the
//! spec's examples with unquoted keys and single quotes) runs only when
//! strict parsing fails. This is the only module that touches json5.

use serde_json::Value;

/// Parses JSON or JSON5 text. The error message is the JSON5 parser's when
/// both fail (it is the more permissive grammar, so its complaint is the
/// one that matters).
pub fn parse_json5(text: &[u8]) -> Result<Value, String> {
    if let Ok(v) = serde_json::from_slice::<Value>(text) {
        return Ok(v);
    }
    let s = std::str::from_utf8(text).map_err(|e| format!("not UTF-8: {e}"))?;
    json5::from_str::<Value>(s).map_err(|e| json5_message(&e))
}

/// A one-line message from a json5 error: its parser renders a multi-line
/// picture of the input whose last part says what was expected.
fn json5_message(e: &json5::Error) -> String {
    let json5::Error::Message { msg, location } = e;
    let what = msg.rsplit("= ").next().unwrap_or(msg).trim();
    match location {
        Some(l) => format!("at column {} of the JSON: {what}", l.column),
        None => what.to_owned(),
    }
}

/// Checks that `text` is one JSON(5) value without building it: the strict
/// path skips over the input with `IgnoredAny`, so validating a capture
/// index does not allocate per line.
pub(crate) fn check_json5(text: &[u8]) -> Result<(), String> {
    if serde_json::from_slice::<serde::de::IgnoredAny>(text).is_ok() {
        return Ok(());
    }
    parse_json5(text).map(|_| ())
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
        assert!(check_json5(b"{\"a\":1} x").is_err());
        assert!(check_json5(b"{\"a\":1}").is_ok());
        assert!(check_json5(b"{a:1,}").is_ok());
    }
}
