//! What is wrong with the params of an MCP request. rmcp reads a known method whose params
//! do not fit as an unknown ("custom") request and would answer -32601 "method not found";
//! drydock answers -32602 "invalid params" saying what is wrong, on every transport.

#[allow(deprecated)]
use rmcp::model::SetLevelRequestParams;
use rmcp::model::{
    CallToolRequestParams, CompleteRequestParams, GetPromptRequestParams, InitializeRequestParams,
    PaginatedRequestParams, ReadResourceRequestParams, SubscribeRequestParams,
    UnsubscribeRequestParams,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// What is wrong with a request's params, said for the client that sent them.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParamsProblem(String);

impl ParamsProblem {
    pub fn new(problem: impl Into<String>) -> Self {
        ParamsProblem(problem.into())
    }
}

/// Checks the shape of `tools/call` params: an object with a string `name`, and
/// `arguments`, when present, an object. Looser than rmcp's reading, so a request it passes
/// is never refused here.
pub fn check_tool_call(params: Option<&Value>) -> Result<(), ParamsProblem> {
    let Some(Value::Object(params)) = params else {
        return Err(ParamsProblem(match params {
            None => {
                "tools/call needs `params`: an object with the tool's `name` and its `arguments`"
                    .into()
            }
            Some(other) => format!(
                "tools/call needs `params` to be an object with the tool's `name` and its `arguments`, not {}",
                describe(other)
            ),
        }));
    };
    match params.get("name") {
        Some(Value::String(_)) => {}
        None => {
            return Err(ParamsProblem::new(
                "tools/call needs `params.name`, the tool to call",
            ));
        }
        Some(other) => {
            return Err(ParamsProblem(format!(
                "`params.name` must be a string (the tool to call), not {}",
                describe(other)
            )));
        }
    }
    match params.get("arguments") {
        None | Some(Value::Null | Value::Object(_)) => Ok(()),
        Some(other) => Err(ParamsProblem(format!(
            "`params.arguments` must be an object of the tool's arguments, not {}",
            describe(other)
        ))),
    }
}

/// Why `method`'s params could not be read, or `None` when the method is not one drydock
/// knows (then it really is "method not found").
pub fn explain(method: &str, params: Option<&Value>) -> Option<ParamsProblem> {
    let problem = match method {
        "tools/call" => check_tool_call(params)
            .err()
            .or_else(|| typed::<CallToolRequestParams>(params).err()),
        "initialize" => typed::<InitializeRequestParams>(params).err(),
        "prompts/get" => typed::<GetPromptRequestParams>(params).err(),
        "resources/read" => typed::<ReadResourceRequestParams>(params).err(),
        "resources/subscribe" => typed::<SubscribeRequestParams>(params).err(),
        "resources/unsubscribe" => typed::<UnsubscribeRequestParams>(params).err(),
        "completion/complete" => typed::<CompleteRequestParams>(params).err(),
        #[allow(deprecated)]
        "logging/setLevel" => typed::<SetLevelRequestParams>(params).err(),
        "tools/list" | "prompts/list" | "resources/list" | "resources/templates/list" => {
            optional::<PaginatedRequestParams>(params).err()
        }
        _ => return None,
    };
    Some(
        problem
            .unwrap_or_else(|| ParamsProblem(format!("the params of {method} could not be read"))),
    )
}

fn typed<T: DeserializeOwned>(params: Option<&Value>) -> Result<(), ParamsProblem> {
    let params = params.cloned().unwrap_or(Value::Null);
    if !params.is_object() {
        return Err(ParamsProblem(format!(
            "`params` must be an object, not {}",
            describe(&params)
        )));
    }
    serde_json::from_value::<T>(params)
        .map(drop)
        .map_err(|e| ParamsProblem(format!("`params`: {e}")))
}

fn optional<T: DeserializeOwned>(params: Option<&Value>) -> Result<(), ParamsProblem> {
    match params {
        None | Some(Value::Null) => Ok(()),
        Some(params) => typed::<T>(Some(params)),
    }
}

/// "an array", "the number 5", ...: what the client sent instead.
fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string {s:?}"),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_call_params_name_what_is_wrong() {
        assert!(check_tool_call(Some(&json!({"name": "compile"}))).is_ok());
        assert!(check_tool_call(Some(&json!({"name": "compile", "arguments": {}}))).is_ok());
        assert!(check_tool_call(Some(&json!({"name": "compile", "arguments": null}))).is_ok());
        let cases = [
            (None, "tools/call needs `params`:"),
            (Some(json!(null)), "not null"),
            (Some(json!("compile")), "not the string \"compile\""),
            (Some(json!({"arguments": {}})), "needs `params.name`"),
            (Some(json!({"name": 5})), "`params.name` must be a string"),
            (
                Some(json!({"name": "run", "arguments": [1]})),
                "`params.arguments` must be an object",
            ),
        ];
        for (params, expected) in cases {
            let problem = check_tool_call(params.as_ref()).unwrap_err().to_string();
            assert!(problem.contains(expected), "{params:?}: {problem}");
        }
    }

    #[test]
    fn known_methods_explain_their_params_and_unknown_ones_do_not() {
        let problem = explain("resources/read", Some(&json!({"uri": 5})))
            .unwrap()
            .to_string();
        assert!(problem.contains("invalid type"), "{problem}");
        let problem = explain("prompts/get", Some(&json!("fix_build")))
            .unwrap()
            .to_string();
        assert!(problem.contains("must be an object"), "{problem}");
        let problem = explain("tools/call", Some(&json!({"name": true})))
            .unwrap()
            .to_string();
        assert!(problem.contains("must be a string"), "{problem}");
        assert!(explain("tools/list", Some(&json!([]))).is_some());
        assert_eq!(explain("no/such/method", Some(&json!({}))), None);
    }
}
