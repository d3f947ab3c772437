//! Conditions on data: the CEL expressions an edge's `if` and a switch node's branches carry
//! (docs/workflows.md, "Conditions on data"). CEL is not Turing-complete — no loops but the
//! comprehension macros over data that exists, no recursion — so an expression's cost is bounded
//! by its own size and the data's. This file keeps both bounds:
//!
//! - **When a workflow is saved** ([`check`]): at most [`MAX_EXPR_BYTES`] and [`MAX_DEPTH`]
//!   brackets deep (the parser recurses), it parses, it names only the variables `context`,
//!   `output` and `parent` and functions of CEL's standard library, and no comprehension
//!   (`all`, `exists`, `exists_one`, `map`, `filter`) sits inside another — so evaluating it is
//!   linear in the data, which the context limit (1 MiB) bounds. A refusal says where: line and
//!   column.
//! - **When it is evaluated** ([`Expr::holds`]): over the instance's context as it is then, read
//!   in place (`expr_data.rs`: only what the expression reaches becomes a CEL value); an
//!   answer that is not a boolean, or an error (a missing key, a type mismatch), is an error the
//!   caller turns into the node's failure, with the expression's text in the message. An
//!   expression in the common subset (fields, comparisons, logic, `size`, string tests, the
//!   `exists`/`all`/`filter`/`map` macros) is first evaluated directly over the JSON
//!   (`expr_fast.rs`), which answers only when its answer is cel's and leaves the rest to cel.

use std::sync::{Arc, LazyLock};

use cel::common::ast::{EntryExpr, Expr as Ast, IdedExpr, operators};
use cel::common::types::CelBool;
use serde_json::{Map, Value};

use super::expr_data::{JsonMap, val};
use super::expr_fast::{self, Fast};

/// The longest expression, in bytes.
pub const MAX_EXPR_BYTES: usize = 1024;
/// The deepest bracket nesting (`(`, `[`, `{`) an expression may have.
pub const MAX_DEPTH: usize = 32;
/// The variables an expression may name.
pub const VARIABLES: [&str; 3] = ["context", "output", "parent"];

/// CEL's standard functions without its optional `chrono` and `regex` libraries — the ones
/// this build links (a unit test calls each).
const FUNCTIONS: [&str; 12] = [
    "size",
    "contains",
    "startsWith",
    "endsWith",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "bool",
    "type",
    "dyn",
];
/// Type names an expression may compare with `type(x) == …`.
const TYPE_NAMES: [&str; 10] =
    ["int", "uint", "double", "string", "bytes", "bool", "list", "map", "null_type", "type"];

/// Why an expression is refused when saved, and where (1-based line and column).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {message}")]
pub struct ExprError {
    /// The line, from 1.
    pub line: u32,
    /// The column, from 1 (in characters).
    pub column: u32,
    /// What is wrong.
    pub message: String,
}

/// A checked expression, ready to evaluate.
pub struct Expr {
    program: cel::Program,
    /// The expression in the directly evaluated subset, when it is in it.
    fast: Option<Fast>,
    text: String,
}

impl std::fmt::Debug for Expr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Expr").field(&self.text).finish()
    }
}

/// What one evaluation sees: the instance's context, and the parent the edge leaves (for a
/// switch's branches, the node the switch follows).
pub struct Inputs<'a> {
    /// The instance's context as it is now (start input and outputs by node name).
    pub context: &'a Map<String, Value>,
    /// The parent's name.
    pub parent: &'a str,
    /// The parent's state: `SUCCEEDED`, `FAILED`, `SKIPPED` or `PASSED`.
    pub state: &'a str,
}

/// Checks `text` as saved, see the module's rules.
pub fn check(text: &str) -> Result<Expr, ExprError> {
    if text.trim().is_empty() {
        return Err(at(text, 0, "the expression is empty".to_owned()));
    }
    if text.len() > MAX_EXPR_BYTES {
        return Err(at(text, MAX_EXPR_BYTES, format!("an expression has at most {MAX_EXPR_BYTES} bytes")));
    }
    let mut depth = 0usize;
    for (offset, byte) in text.bytes().enumerate() {
        match byte {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth > MAX_DEPTH {
            return Err(at(text, offset, format!("brackets nest at most {MAX_DEPTH} deep")));
        }
    }
    let program = cel::Program::compile(text).map_err(|errors| match errors.errors.first() {
        Some(first) => ExprError {
            line: u32::try_from(first.pos.0).unwrap_or(1).max(1),
            column: u32::try_from(first.pos.1).unwrap_or(0).saturating_add(1),
            message: first.msg.clone(),
        },
        None => at(text, 0, "the expression does not parse".to_owned()),
    })?;
    let mut walk = Walk { program: &program, text, bound: Vec::new(), comprehensions: 0 };
    walk.expr(program.expression())?;
    let fast = expr_fast::compile(program.expression());
    Ok(Expr { program, fast, text: text.to_owned() })
}

/// The error at byte `offset` of `text`.
fn at(text: &str, offset: usize, message: String) -> ExprError {
    let before = text.get(..offset.min(text.len())).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    ExprError {
        line: u32::try_from(line).unwrap_or(u32::MAX),
        column: u32::try_from(column).unwrap_or(u32::MAX),
        message,
    }
}

/// The checks on the parsed tree: names in scope, known functions, comprehensions not nested.
struct Walk<'a> {
    program: &'a cel::Program,
    text: &'a str,
    /// Variables a comprehension binds, innermost last.
    bound: Vec<String>,
    /// Comprehensions around the node being walked.
    comprehensions: usize,
}

impl Walk<'_> {
    fn fail(&self, node: &IdedExpr, message: String) -> ExprError {
        let offset = self.program.source_info().offset_for(node.id).map_or(0, |(start, _)| start as usize);
        at(self.text, offset, message)
    }

    fn expr(&mut self, node: &IdedExpr) -> Result<(), ExprError> {
        match &node.expr {
            Ast::Ident(name) => {
                if !(VARIABLES.contains(&name.as_str())
                    || TYPE_NAMES.contains(&name.as_str())
                    || self.bound.iter().any(|b| b == name))
                {
                    return Err(
                        self.fail(node, format!("unknown name {name:?}: use context, output or parent"))
                    );
                }
            }
            Ast::Call(call) => {
                let data_left = match (call.func_name.as_str(), call.args.as_slice()) {
                    (operators::EQUALS | operators::NOT_EQUALS, [left, right]) => {
                        builds_container(left) && !builds_container(right)
                    }
                    (operators::IN, [_, right]) => match &right.expr {
                        Ast::List(list) => list.elements.iter().any(builds_container),
                        _ => false,
                    },
                    _ => false,
                };
                if data_left {
                    return Err(self.fail(
                        node,
                        "compare a list or map with the data on the left, as in output.kinds == ['a', 'b']: \
                         a list or map the expression builds equals only another it builds"
                            .to_owned(),
                    ));
                }
                let operator = call.func_name.starts_with(['_', '!', '-', '@']);
                if !operator && !FUNCTIONS.contains(&call.func_name.as_str()) {
                    return Err(self.fail(node, format!("unknown function {:?}", call.func_name)));
                }
                if let Some(target) = &call.target {
                    self.expr(target)?;
                }
                for arg in &call.args {
                    self.expr(arg)?;
                }
            }
            Ast::Comprehension(c) => {
                if self.comprehensions > 0 {
                    return Err(self.fail(
                        node,
                        "a comprehension (all, exists, exists_one, map, filter) may not sit inside another: \
                         its cost would grow with the square of the data"
                            .to_owned(),
                    ));
                }
                self.expr(&c.iter_range)?;
                self.expr(&c.accu_init)?;
                let scope = self.bound.len();
                self.bound.push(c.iter_var.clone());
                self.bound.extend(c.iter_var2.clone());
                self.bound.push(c.accu_var.clone());
                self.comprehensions += 1;
                let inner =
                    [&c.loop_cond, &c.loop_step, &c.result].into_iter().try_for_each(|e| self.expr(e));
                self.comprehensions -= 1;
                self.bound.truncate(scope);
                inner?;
            }
            Ast::List(list) => list.elements.iter().try_for_each(|e| self.expr(e))?,
            Ast::Map(map) => {
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(entry) = &entry.expr {
                        self.expr(&entry.key)?;
                        self.expr(&entry.value)?;
                    }
                }
            }
            Ast::Select(select) => self.expr(&select.operand)?,
            Ast::Struct(_) => return Err(self.fail(node, "message literals are not supported".to_owned())),
            Ast::Literal(_) | Ast::Unspecified => {}
        }
        Ok(())
    }
}

/// Whether `node` makes a list or map of cel's own — a literal, or a `map`/`filter`
/// comprehension (whose accumulator starts as a list) — which compares equal only to its kind.
fn builds_container(node: &IdedExpr) -> bool {
    match &node.expr {
        Ast::List(_) | Ast::Map(_) => true,
        Ast::Comprehension(c) => matches!(c.accu_init.expr, Ast::List(_)),
        _ => false,
    }
}

/// CEL's standard environment, made once (`Context::default` would build it per evaluation).
static ENV: LazyLock<Arc<cel::Env>> = LazyLock::new(|| Arc::new(cel::Env::stdlib()));

impl Expr {
    /// The expression as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether it is in the subset evaluated directly over the JSON (`expr_fast.rs`); cel
    /// still answers where the direct evaluator gives up.
    pub fn is_direct(&self) -> bool {
        self.fast.is_some()
    }

    /// Evaluates it over `inputs`: `Ok(true)` or `Ok(false)`, or why it has no boolean answer.
    pub fn holds(&self, inputs: &Inputs<'_>, output: &Value) -> Result<bool, String> {
        let parent = serde_json::json!({"name": inputs.parent, "state": inputs.state});
        if let (Some(fast), Value::Object(fields)) = (&self.fast, &parent)
            && let Some(answer) = fast.holds(inputs.context, output, fields)
        {
            return Ok(answer);
        }
        self.interpret(inputs, output, &parent)
    }

    /// Evaluates it with cel's interpreter.
    fn interpret(&self, inputs: &Inputs<'_>, output: &Value, parent: &Value) -> Result<bool, String> {
        let mut scope = cel::Context::with_env(Arc::clone(&ENV));
        scope.add_variable_as_val("context", Box::new(JsonMap::new(inputs.context)));
        scope.add_variable_as_val("output", val(output));
        scope.add_variable_as_val("parent", val(parent));
        let answer = cel::Value::resolve_val(self.program.expression(), &scope).map_err(|e| e.to_string())?;
        match answer.as_ref().downcast_ref::<CelBool>() {
            Some(answer) => Ok(*answer.inner()),
            None => Err(format!("{} is not true or false", answer.as_ref().get_type().name())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn eval(text: &str, context: Value) -> Result<bool, String> {
        let Value::Object(map) = context else { panic!("an object") };
        let output = map.get("a").cloned().unwrap_or(Value::Null);
        check(text)
            .map_err(|e| e.to_string())?
            .holds(&Inputs { context: &map, parent: "a", state: "SUCCEEDED" }, &output)
    }

    #[test]
    fn conditions_read_the_context_the_output_and_the_parent() {
        let ctx =
            serde_json::json!({"day": "2030-01-01", "a": {"rows": 3, "kinds": ["x", "y"], "ratio": 0.5}});
        assert_eq!(eval("output.rows > 2", ctx.clone()), Ok(true));
        assert_eq!(eval("context.a.rows == 3 && context.day.startsWith('2030')", ctx.clone()), Ok(true));
        assert_eq!(eval("parent.name == 'a' && parent.state == 'SUCCEEDED'", ctx.clone()), Ok(true));
        assert_eq!(
            eval("output.kinds.exists(k, k == 'y') && size(output.kinds) == 2", ctx.clone()),
            Ok(true)
        );
        assert_eq!(eval("has(output.missing)", ctx.clone()), Ok(false));
        assert_eq!(eval("output.ratio < 1.0 && 'x' in output.kinds", ctx.clone()), Ok(true));
        let err = eval("output.missing > 1", ctx.clone()).unwrap_err();
        assert!(err.contains("missing"), "{err}");
        assert!(eval("output.rows", ctx).unwrap_err().contains("not true or false"));
    }

    #[test]
    fn every_listed_function_exists_in_this_build() {
        let ctx = serde_json::json!({"a": {"s": "abc", "n": 2}});
        for text in [
            "size(output.s) == 3",
            "output.s.contains('b')",
            "output.s.startsWith('a')",
            "output.s.endsWith('c')",
            "int('2') == output.n",
            "uint(2) == uint(output.n)",
            "double(output.n) == 2.0",
            "string(output.n) == '2'",
            "bytes('a') == b'a'",
            "bool('true')",
            "type(output.n) == int",
            "dyn(output.n) == 2",
        ] {
            assert_eq!(eval(text, ctx.clone()), Ok(true), "{text}");
        }
        assert_eq!(FUNCTIONS.len(), 12);
    }

    #[test]
    fn refusals_say_where() {
        let e = check("output.rows >").unwrap_err();
        assert_eq!(e.line, 1, "{e}");
        let e = check("output.rows > 1 &&\n  secret.key == 'x'").unwrap_err();
        assert_eq!((e.line, e.column), (2, 3), "{e}");
        assert!(e.message.contains("\"secret\""), "{e}");
        let e = check("output.s.matches('a+')").unwrap_err();
        assert!(e.message.contains("unknown function \"matches\""), "{e}");
        let e = check("output.a.all(x, output.b.exists(y, x == y))").unwrap_err();
        assert!(e.message.contains("may not sit inside another"), "{e}");
        assert_eq!(e.column, 32, "at the inner call: {e}");
        let deep = format!("{}1{}", "(".repeat(40), ")".repeat(40));
        assert!(check(&deep).unwrap_err().message.contains("nest"));
        assert!(check(&"a".repeat(2000)).unwrap_err().message.contains("1024 bytes"));
        assert!(check("  ").is_err());
        assert!(check("output.a.map(x, x * 2).filter(y, y > 2).size() > 0").is_ok(), "chained, not nested");
    }

    fn eval_data(text: &str) -> Result<bool, String> {
        let context = json!({
            "a": {"rows": 3, "kinds": ["x", "y"], "ratio": 0.5, "big": 18446744073709551615u64,
                  "pairs": [[1, 2], [3]], "recs": [{"id": 1, "r": "eu"}, {"id": 2, "r": "us"}], "none": null},
            "b": {"kinds": ["x", "y"], "recs": [{"r": "eu", "id": 1.0}, {"id": 2, "r": "us"}]},
        });
        let serde_json::Value::Object(map) = context else { unreachable!() };
        let inputs = Inputs { context: &map, parent: "a", state: "SUCCEEDED" };
        check(text).map_err(|e| e.to_string())?.holds(&inputs, &map["a"])
    }

    #[test]
    fn data_read_in_place_behaves_as_cel_values() {
        for text in [
            "output.kinds == ['x', 'y'] && output.kinds != ['y', 'x']",
            "output.kinds == context.b.kinds && output.recs == context.b.recs",
            "output.recs[0] == {'id': 1, 'r': 'eu'} && output.recs[1.0].r == 'us'",
            "'x' in output.kinds && !('z' in output.kinds) && [1, 2] in output.pairs",
            "'rows' in output && !('nope' in output) && !(1 in output)",
            "size(output) == 7 && size(output.kinds) == 2 && output.kinds.size() == 2",
            "output.all(k, k.size() > 0) && output.exists_one(k, k == 'rows')",
            "output.recs.filter(r, r.r == 'eu').map(r, r.id) == [1]",
            "output.kinds + ['z'] == ['x', 'y', 'z'] && size(['w'] + output.kinds) == 3",
            "type(output) == map && type(output.kinds) == list && type(output.big) == uint",
            "type(output.rows) == int && type(output.ratio) == double && output.none == null",
            "has(output.rows) && !has(output.missing) && has(context.b.recs)",
            "output.rows == 3.0 && output.pairs[0][1] == 2 && dyn(output.rows) == 3",
            "context.a.recs.exists(r, r.id == 2 && r.r.startsWith('u'))",
        ] {
            assert_eq!(eval_data(text), Ok(true), "{text}");
        }
        assert!(eval_data("output.kinds[2] == 'z'").unwrap_err().contains("ndex"), "out of bounds");
        assert!(eval_data("output.missing == 1").unwrap_err().contains("missing"));
        assert!(eval_data("output.kinds['x'] == 1").is_err(), "a list indexed with a string");
    }

    /// The direct evaluator answers the subset it covers as cel does, and gives up on the
    /// rest — errors included — so cel answers them.
    #[test]
    fn the_direct_evaluator_gives_cels_answers_or_none() {
        let context = json!({
            "a": {"rows": 3, "kinds": ["x", "y"], "ratio": 0.5, "big": 18446744073709551615u64, "none": null,
                  "recs": [{"id": 1, "r": "eu", "n": "n-12"}, {"id": 2, "r": "us", "n": "m-1"},
                           {"id": 3, "r": "eu", "n": "n-3"}], "ü": "äöü"},
            "b": {"recs": [{"id": 1.5}, {"id": 2}]},
        });
        let Value::Object(map) = context else { unreachable!() };
        let inputs = Inputs { context: &map, parent: "a", state: "SUCCEEDED" };
        let parent = json!({"name": "a", "state": "SUCCEEDED"});
        let Value::Object(fields) = &parent else { unreachable!() };
        let covered = [
            "output.rows > 2 && output.ratio < 1.0 && parent.state == 'SUCCEEDED'",
            "output.recs.exists(r, r.id > 2)",
            "output.recs.exists(r, r.id > 3)",
            "output.recs.all(r, r.id >= 1 && r.r.size() == 2)",
            "output.recs.all(r, r.r == 'eu')",
            "output.recs.filter(r, r.r == 'eu' && r.n.startsWith('n-1')).size() == 1",
            "size(output.recs.filter(r, r.r == 'eu')) == 2 && output.recs.filter(r, r.r == 'eu')[1].id == 3",
            "output.recs.map(r, r.id).exists(i, i == 2) && output.recs.map(r, r.n)[0].endsWith('12')",
            "output.kinds.exists(k, k == 'y') && !output.kinds.exists(k, k.contains('z'))",
            "size(output) == 7 && size(output.kinds) == 2 && output.kinds.size() == 2",
            "has(output.rows) && !has(output.missing) && output.none == null",
            "output.big == output.big && output['ü'].size() == 3 && output.kinds[1] == 'y'",
            "(output.rows > 5 ? 'many' : 'few') == 'few' && !(output.rows != 3)",
            "false && output.missing > 1",
            "true || output.missing > 1",
            "context.a.recs.exists(r, r.id == 2) && context.b.recs[1].id == 2",
            "output.recs.exists(output, output.id == 1)",
        ];
        let given_up = [
            "output.missing > 1",
            "output.kinds[2] == 'z'",
            "output.rows == 3.0",
            "output.rows < 3.5",
            "output.big > 1",
            "output.rows",
            "output.recs.exists(r, r.missing == 1)",
            "context.b.recs.all(r, r.id > 1)",
            "output.recs.exists(r, r.id == 2.0)",
            "output.all(k, k.size() > 0)",
            "output.recs.exists_one(r, r.id == 2)",
            "output.kinds == ['x', 'y']",
            "'x' in output.kinds",
            "output.rows + 1 == 4",
            "type(output.rows) == int",
            "output.missing > 1 && false",
        ];
        for (text, must_answer) in
            covered.iter().map(|t| (t, true)).chain(given_up.iter().map(|t| (t, false)))
        {
            let expr = check(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            let cel = expr.interpret(&inputs, &map["a"], &parent);
            let direct = expr.fast.as_ref().and_then(|fast| fast.holds(&map, &map["a"], fields));
            match direct {
                Some(answer) => assert_eq!(cel, Ok(answer), "{text}: the direct answer is cel's"),
                None => assert!(!must_answer, "{text}: in the subset, answered by cel: {cel:?}"),
            }
            assert!(must_answer || direct.is_none(), "{text}: left to cel, which says {cel:?}");
            assert_eq!(expr.holds(&inputs, &map["a"]), cel, "{text}");
        }
    }

    #[test]
    fn a_built_list_or_map_on_the_left_of_a_comparison_is_refused_when_saved() {
        for text in [
            "['x', 'y'] == output.kinds",
            "{'id': 1} != output.recs[0]",
            "output.recs.map(r, r.id) == output.ids",
        ] {
            let e = check(text).unwrap_err();
            assert!(e.message.contains("data on the left"), "{text}: {e}");
        }
        let e = check("output.pair in [[1, 2]]").unwrap_err();
        assert!(e.message.contains("data on the left"), "{e}");
        assert!(check("[1] == [1] && output.a.exists(x, x > 1) == true && 1 in [1, 2]").is_ok());
    }
}
