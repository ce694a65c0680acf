//! The two patch formats that need code: RFC 7386 JSON merge patch (also used for strategic
//! merge patch, see `handlers::patch`) and RFC 6902 JSON patch.

use serde_json::Value;

use crate::status::ApiError;

/// RFC 7386 JSON merge patch.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        (t, p) => *t = p.clone(),
    }
}

/// RFC 6902 JSON patch: add, replace, remove and test.
pub fn json_patch(target: &mut Value, ops: &Value) -> Result<(), ApiError> {
    let bad = |m: String| ApiError {
        code: 422,
        reason: "Invalid",
        message: m,
        details: None,
    };
    for op in ops
        .as_array()
        .ok_or_else(|| ApiError::bad_request("a JSON patch must be an array"))?
    {
        let path = op["path"].as_str().unwrap_or("");
        let (parent_path, last) = path
            .rsplit_once('/')
            .ok_or_else(|| bad(format!("invalid path {path:?}")))?;
        let last = last.replace("~1", "/").replace("~0", "~");
        let value = op["value"].clone();
        match op["op"].as_str().unwrap_or("") {
            "test" => {
                if target.pointer(path) != Some(&value) {
                    return Err(bad(format!("testing value {path} failed")));
                }
            }
            kind @ ("add" | "replace" | "remove") => {
                let parent = target
                    .pointer_mut(parent_path)
                    .ok_or_else(|| bad(format!("doc is missing path: {path:?}")))?;
                match parent {
                    Value::Object(m) => {
                        if kind == "remove" || (kind == "replace" && !m.contains_key(&last)) {
                            m.remove(&last)
                                .ok_or_else(|| bad(format!("doc is missing key: {path:?}")))?;
                        }
                        if kind != "remove" {
                            m.insert(last, value);
                        }
                    }
                    Value::Array(a) => {
                        let idx = if last == "-" {
                            a.len()
                        } else {
                            last.parse()
                                .map_err(|_| bad(format!("bad index {last:?}")))?
                        };
                        match kind {
                            "add" if idx <= a.len() => a.insert(idx, value),
                            "replace" if idx < a.len() => a[idx] = value,
                            "remove" if idx < a.len() => {
                                a.remove(idx);
                            }
                            _ => return Err(bad(format!("index out of range: {path:?}"))),
                        }
                    }
                    _ => return Err(bad(format!("doc is missing path: {path:?}"))),
                }
            }
            other => return Err(bad(format!("unsupported JSON patch op {other:?}"))),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_and_json_patch() {
        let mut v = json!({"a": {"b": 1, "c": 2}, "l": [1, 2]});
        merge_patch(&mut v, &json!({"a": {"b": null, "d": 3}, "l": [9]}));
        assert_eq!(v, json!({"a": {"c": 2, "d": 3}, "l": [9]}));
        json_patch(&mut v, &json!([{"op": "add", "path": "/l/-", "value": 10}, {"op": "replace", "path": "/a/c", "value": 5}, {"op": "remove", "path": "/a/d"}]))
            .unwrap();
        assert_eq!(v, json!({"a": {"c": 5}, "l": [9, 10]}));
        assert!(json_patch(&mut v, &json!([{"op": "test", "path": "/a/c", "value": 6}])).is_err());
    }
}
