//! One record -> one JSON object (the spec leaves this open; the rule is
//! ours and stated in FORMATS.md).
//!
//! Field names map to the field values as strings, exactly as written
//! (after unescaping): a `frequency` of `300` stays `"300"`, a datetime
//! stays a string of digits. `-` becomes `null`. The OSLJ's members are
//! then added in their own order; a member named like a field is a clash
//! and an error, because silently preferring either side would lose data.

use serde_json::{Map, Value};

use super::{Error, Field, Record, Schema, Token};

/// Expands a data line (`line` is its 1-based number, for errors). With a
/// declared schema the number of fields must match it; without one the
/// first field is `key` and the others `value1`, `value2`, ...
pub fn expand(
    record: &Record<'_>,
    schema: &Schema,
    line: u64,
) -> Result<Map<String, Value>, Error> {
    // Field names come first and in schema order, then the OSLJ members in
    // their own order (serde_json keeps insertion order in this crate).
    let mut obj = Map::new();
    let mut n = 0;
    let mut oslj = None;
    for token in record.tokens() {
        match token.map_err(|(at, what)| Error::Syntax {
            line,
            column: at + 1,
            what: what.into(),
        })? {
            Token::Field(f) => {
                let name = schema.name(n).into_owned();
                let value = field_value(&f);
                // Only possible without `!fields` when an undeclared name
                // repeats; declared names are unique (Schema checks).
                if obj.insert(name.clone(), value).is_some() {
                    return Err(Error::Clash { line, name });
                }
                n += 1;
            }
            Token::Json(j) => oslj = Some(j),
        }
    }
    if schema.declared && n != schema.arity() {
        return Err(Error::Arity {
            line,
            expected: schema.arity(),
            got: n,
        });
    }
    if let Some(j) = oslj {
        match super::parse_json5(j).map_err(|message| Error::Json { line, message })? {
            Value::Object(members) => {
                for (name, v) in members {
                    if obj.contains_key(&name) {
                        return Err(Error::Clash { line, name });
                    }
                    obj.insert(name, v);
                }
            }
            _ => {
                return Err(Error::Json {
                    line,
                    message: "the OSLJ is not a JSON object".into(),
                })
            }
        }
    }
    Ok(obj)
}

/// A field as a JSON value: `null` for `-`, otherwise a string. Bytes that
/// are not UTF-8 become U+FFFD (JSON text cannot hold them).
fn field_value(f: &Field<'_>) -> Value {
    match f.value() {
        None => Value::Null,
        Some(bytes) => Value::String(String::from_utf8_lossy(&bytes).into_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn people_example() {
        let s = Schema::new(["lname", "fname"], ["qualification", "profession"]);
        let r = Record::new(br#"Roe   Richard PhD     Scientist             {dob: "May 7, 1920", awards: ["Fiction 42", "Mad Scientist"]}"#);
        let v = Value::Object(expand(&r, &s, 4).unwrap());
        assert_eq!(
            v,
            json!({"lname": "Roe", "fname": "Richard", "qualification": "PhD", "profession": "Scientist",
                   "dob": "May 7, 1920", "awards": ["Fiction 42", "Mad Scientist"]})
        );
        let r = Record::new(b"Shmoe Joe     -       Assistant");
        assert_eq!(expand(&r, &s, 5).unwrap()["qualification"], Value::Null);
    }

    #[test]
    fn clash_and_arity_name_the_line() {
        let s = Schema::new(["surt"], ["frequency"]);
        let r = Record::new(br#"com,a)/ 1 {"surt": "x"}"#);
        assert!(
            matches!(expand(&r, &s, 9), Err(Error::Clash { line: 9, ref name }) if name == "surt")
        );
        let r = Record::new(b"com,a)/");
        assert!(matches!(
            expand(&r, &s, 7),
            Err(Error::Arity {
                line: 7,
                expected: 2,
                got: 1
            })
        ));
        let r = Record::new(b"com,a)/ 1 [1]");
        // `[` does not open an OSLJ: it is a third field.
        assert!(matches!(
            expand(&r, &s, 2),
            Err(Error::Arity { got: 3, .. })
        ));
    }

    #[test]
    fn undeclared_schema_names() {
        let r = Record::new(b"k a \"b c\" {\"x\":1}");
        let v = Value::Object(expand(&r, &Schema::undeclared(), 1).unwrap());
        assert_eq!(
            v,
            json!({"key": "k", "value1": "a", "value2": "b c", "x": 1})
        );
    }
}
