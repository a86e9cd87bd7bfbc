//! Custom session state: a JSON object an agent declares with a schema and defaults, seeded when
//! a session starts, read and changed by server tools through their context (as RFC 6902 patches
//! the store stages with the call's result and applies with the step's commit), and folded from
//! a child's final state by the parent's `after_sub_agent` hook.

use crate::chunk::EndStatus;
use json_patch::{AddOperation, Patch, PatchOperation};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};
use std::sync::Arc;

/// An agent's declared state: its JSON Schema, its defaults and the validator of the schema.
#[derive(Clone)]
pub struct StateSchema {
    schema: Value,
    defaults: Map<String, Value>,
    validator: Arc<jsonschema::Validator>,
}

impl std::fmt::Debug for StateSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateSchema")
            .field("schema", &self.schema)
            .field("defaults", &self.defaults)
            .finish()
    }
}

/// Why a state declaration was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateSchemaError {
    #[error("invalid state schema: {0}")]
    InvalidSchema(String),
    #[error("the state defaults must be a JSON object")]
    DefaultsNotAnObject,
    #[error("the state defaults do not match the state schema: {0}")]
    DefaultsDoNotMatch(StateError),
}

/// Why a state, or a change of it, was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    #[error("the state must be a JSON object")]
    NotAnObject,
    #[error("the state does not match its schema at {at}: {reason}")]
    SchemaMismatch { at: String, reason: String },
    #[error("the state patch does not apply: {0}")]
    PatchDoesNotApply(String),
    #[error("{0:?} is not a JSON Pointer (RFC 6901)")]
    InvalidPointer(String),
    #[error("the value cannot be written as JSON: {0}")]
    NotJson(String),
    #[error("this session's agent declares no custom state")]
    NoState,
}

impl StateSchema {
    /// The state of a Rust type: its schema derived by `schemars`, its `Default` as the defaults.
    /// Refused when the default is not a JSON object or does not match the derived schema.
    pub fn of<T: JsonSchema + Serialize + Default>() -> Result<Self, StateSchemaError> {
        let defaults = serde_json::to_value(T::default())
            .map_err(|_| StateSchemaError::DefaultsNotAnObject)?;
        Self::new(schemars::schema_for!(T).to_value(), defaults)
    }

    /// A state declared as a JSON Schema and defaults (a JSON object that matches it).
    pub fn new(schema: Value, defaults: Value) -> Result<Self, StateSchemaError> {
        let validator = jsonschema::validator_for(&schema)
            .map_err(|e| StateSchemaError::InvalidSchema(e.to_string()))?;
        let Value::Object(defaults) = defaults else {
            return Err(StateSchemaError::DefaultsNotAnObject);
        };
        let declared = Self {
            schema,
            defaults,
            validator: Arc::new(validator),
        };
        declared
            .check(&Value::Object(declared.defaults.clone()))
            .map_err(StateSchemaError::DefaultsDoNotMatch)?;
        Ok(declared)
    }

    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// The defaults, as a session starts with them when the start passes no state.
    pub fn defaults(&self) -> Value {
        Value::Object(self.defaults.clone())
    }

    /// The state a session starts with: the defaults, each top-level field of `initial`
    /// replacing the default's, checked against the schema.
    pub fn seed(&self, initial: Option<&Value>) -> Result<Value, StateError> {
        let mut state = self.defaults.clone();
        match initial {
            None => {}
            Some(Value::Object(fields)) => {
                state.extend(fields.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            Some(_) => return Err(StateError::NotAnObject),
        }
        let state = Value::Object(state);
        self.check(&state)?;
        Ok(state)
    }

    /// Checks a whole state against the schema; the first mismatch names its place.
    pub fn check(&self, state: &Value) -> Result<(), StateError> {
        if !state.is_object() {
            return Err(StateError::NotAnObject);
        }
        if let Some(first) = self.validator.iter_errors(state).next() {
            let at = first.instance_path.to_string();
            return Err(StateError::SchemaMismatch {
                at: if at.is_empty() { "/".to_owned() } else { at },
                reason: first.to_string(),
            });
        }
        Ok(())
    }

    /// `state` with `patch` applied, checked against the schema; `state` itself is untouched.
    pub fn apply(&self, state: &Value, patch: &[PatchOperation]) -> Result<Value, StateError> {
        let mut next = state.clone();
        json_patch::patch(&mut next, patch)
            .map_err(|e| StateError::PatchDoesNotApply(e.to_string()))?;
        self.check(&next)?;
        Ok(next)
    }
}

/// The operation that sets the value at `pointer` (an RFC 6901 JSON Pointer such as `/topic`):
/// an `add`, which replaces an existing member, so applying it twice changes nothing more.
pub fn set_operation(pointer: &str, value: impl Serialize) -> Result<PatchOperation, StateError> {
    let path = json_patch::jsonptr::PointerBuf::parse(pointer)
        .map_err(|_| StateError::InvalidPointer(pointer.to_owned()))?;
    let value = serde_json::to_value(value).map_err(|e| StateError::NotJson(e.to_string()))?;
    Ok(PatchOperation::Add(AddOperation { path, value }))
}

/// How a child session ended, as its parent's `after_sub_agent` hook sees it.
#[derive(Debug, Clone, Copy)]
pub struct ChildEnded<'a> {
    /// The call of the parent that ran the child.
    pub tool_call_id: &'a str,
    pub agent_type: &'a str,
    pub status: EndStatus,
    /// The child's final output, when it completed.
    pub output: Option<&'a str>,
    /// The child's final custom state, when its agent declares one.
    pub state: Option<&'a Value>,
    /// The parent's own custom state, as committed before the step that made the call.
    pub parent_state: &'a Value,
}

/// One field the `after_sub_agent` hook sets in the parent's state: `path` is a JSON Pointer.
#[derive(Debug, Clone, PartialEq)]
pub struct StateSet {
    pub path: String,
    pub value: Value,
}

impl StateSet {
    pub fn new(path: impl Into<String>, value: impl Serialize) -> Self {
        Self {
            path: path.into(),
            // A value that cannot be JSON (a map with non-string keys) becomes null: the hook's
            // author sees it in the state, and the patch stays well-formed.
            value: serde_json::to_value(value).unwrap_or(Value::Null),
        }
    }
}

/// A parent's hook run when one of its sub-agent calls ends: the fields it returns are set in
/// the parent's state with the call's result. It may run more than once for one call (a retried
/// activity), so it sets fields rather than appending to them.
pub type AfterSubAgent = Arc<dyn Fn(&ChildEnded<'_>) -> Vec<StateSet> + Send + Sync>;

/// The patch of the sets an `after_sub_agent` hook returned, applied to `parent_state` and
/// checked against the parent's schema.
pub fn patch_of_sets(
    schema: &StateSchema,
    parent_state: &Value,
    sets: Vec<StateSet>,
) -> Result<Patch, StateError> {
    let operations = sets
        .into_iter()
        .map(|set| set_operation(&set.path, set.value))
        .collect::<Result<Vec<_>, _>>()?;
    schema.apply(parent_state, &operations)?;
    Ok(Patch(operations))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
    struct Notes {
        topic: String,
        count: u32,
        #[serde(default)]
        tags: Vec<String>,
    }

    #[test]
    fn a_typed_state_seeds_from_its_defaults_and_refuses_what_its_schema_refuses() {
        let schema = StateSchema::of::<Notes>().unwrap();
        assert_eq!(
            schema.seed(None).unwrap(),
            json!({"topic": "", "count": 0, "tags": []})
        );
        assert_eq!(
            schema.seed(Some(&json!({"topic": "rust"}))).unwrap(),
            json!({"topic": "rust", "count": 0, "tags": []})
        );
        assert_eq!(
            schema.seed(Some(&json!(["topic"]))).unwrap_err(),
            StateError::NotAnObject
        );
        let wrong = schema.seed(Some(&json!({"count": "many"}))).unwrap_err();
        assert!(
            matches!(&wrong, StateError::SchemaMismatch { at, .. } if at == "/count"),
            "{wrong}"
        );

        let state = schema.seed(None).unwrap();
        let patch = vec![
            set_operation("/count", 2).unwrap(),
            set_operation("/tags/-", "a").unwrap(),
        ];
        assert_eq!(
            schema.apply(&state, &patch).unwrap(),
            json!({"topic": "", "count": 2, "tags": ["a"]})
        );
        let negative = schema.apply(&state, &[set_operation("/count", -1).unwrap()]);
        assert!(matches!(negative, Err(StateError::SchemaMismatch { .. })));
        let missing: Patch =
            serde_json::from_value(json!([{"op": "remove", "path": "/nope"}])).unwrap();
        assert!(matches!(
            schema.apply(&state, &missing),
            Err(StateError::PatchDoesNotApply(_))
        ));
        assert_eq!(
            set_operation("count", 1).unwrap_err(),
            StateError::InvalidPointer("count".into())
        );
    }

    #[test]
    fn declared_schemas_and_defaults_are_checked_together() {
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
        assert!(StateSchema::new(schema.clone(), json!({"n": 1})).is_ok());
        assert_eq!(
            StateSchema::new(schema.clone(), json!([1])).unwrap_err(),
            StateSchemaError::DefaultsNotAnObject
        );
        assert!(matches!(
            StateSchema::new(schema, json!({"n": "one"})),
            Err(StateSchemaError::DefaultsDoNotMatch(_))
        ));
        assert!(matches!(
            StateSchema::new(json!({"type": "objekt"}), json!({})),
            Err(StateSchemaError::InvalidSchema(_))
        ));

        let parent = StateSchema::new(
            json!({"type": "object", "properties": {"found": {"type": "string"}}}),
            json!({}),
        )
        .unwrap();
        let sets = vec![StateSet::new("/found", "gold")];
        let patch = patch_of_sets(&parent, &json!({}), sets.clone()).unwrap();
        let once = parent.apply(&json!({}), &patch).unwrap();
        assert_eq!(once, json!({"found": "gold"}));
        assert_eq!(
            parent.apply(&once, &patch).unwrap(),
            once,
            "sets are idempotent"
        );
        let bad = patch_of_sets(&parent, &json!({}), vec![StateSet::new("/found", 3)]);
        assert!(matches!(bad, Err(StateError::SchemaMismatch { .. })));
    }
}
