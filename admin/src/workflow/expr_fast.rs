//! A direct evaluator for the common shape of a condition, beside cel's interpreter.
//!
//! cel's interpreter walks a comprehension (`exists`, `all`, `filter`, `map`) at about
//! 0.3–0.5 µs per element — a child scope and a bound variable each — so a macro over the
//! 18 000 records a 1 MiB context can hold takes 6–9 ms. Most conditions are field reads,
//! comparisons with literals, `&&`/`||`/`!`, `size`, string tests and those four macros over a
//! list of records; this file evaluates exactly that subset straight over the JSON.
//!
//! It answers only when it is sure to give cel's answer: any step it does not cover, or that
//! would be an error in CEL (a missing key, an index out of range, operands of different
//! kinds, a non-boolean where a boolean belongs), makes it give up ([`None`]) and the caller
//! evaluates the whole expression with cel, errors and all. With no error on the way, CEL's
//! meaning of the subset is plain — `&&` and `||` short-circuit to the same value, a macro is
//! "any", "every", "those that" or "each mapped" — so a `Some` answer is cel's answer
//! (`expr::tests` compares the two over many expressions).

use cel::common::ast::{ComprehensionExpr, Expr as Ast, IdedExpr, LiteralValue, operators};
use serde_json::{Map, Value};

use super::expr_data::Number;

/// An expression in the subset, compiled from cel's parsed tree.
#[derive(Debug)]
pub(super) enum Fast {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Double(f64),
    Str(String),
    /// A variable: `context`, `output`, `parent`, or one a macro binds.
    Var(String),
    /// `operand.field`, or `has(operand.field)` when `test`.
    Select {
        operand: Box<Fast>,
        field: String,
        test: bool,
    },
    Index(Box<Fast>, Box<Fast>),
    Size(Box<Fast>),
    Not(Box<Fast>),
    And(Box<Fast>, Box<Fast>),
    Or(Box<Fast>, Box<Fast>),
    Cond(Box<Fast>, Box<Fast>, Box<Fast>),
    Compare(Op, Box<Fast>, Box<Fast>),
    Text(TextTest, Box<Fast>, Box<Fast>),
    Macro {
        kind: Macro,
        range: Box<Fast>,
        var: String,
        body: Box<Fast>,
    },
}

#[derive(Debug, Clone, Copy)]
pub(super) enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Debug, Clone, Copy)]
pub(super) enum TextTest {
    StartsWith,
    EndsWith,
    Contains,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Macro {
    Exists,
    All,
    Filter,
    Map,
}

/// A value met while evaluating: JSON read in place, a literal, or a list a macro built.
#[derive(Debug, Clone)]
enum V<'a> {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Double(f64),
    Str(&'a str),
    List(&'a [Value]),
    Built(Vec<V<'a>>),
    Map(&'a Map<String, Value>),
}

/// `json` as a value, with CEL's kinds (as `expr_data` gives them).
fn of(json: &Value) -> V<'_> {
    match json {
        Value::Null => V::Null,
        Value::Bool(b) => V::Bool(*b),
        Value::Number(n) => match Number::of(n) {
            Number::Int(i) => V::Int(i),
            Number::UInt(u) => V::UInt(u),
            Number::Double(d) => V::Double(d),
        },
        Value::String(s) => V::Str(s),
        Value::Array(items) => V::List(items),
        Value::Object(map) => V::Map(map),
    }
}

/// `node` in the subset, or `None` when any part of it is not.
pub(super) fn compile(node: &IdedExpr) -> Option<Fast> {
    let boxed = |node: &IdedExpr| compile(node).map(Box::new);
    Some(match &node.expr {
        Ast::Literal(literal) => match literal {
            LiteralValue::Null => Fast::Null,
            LiteralValue::Boolean(b) => Fast::Bool(*b.inner()),
            LiteralValue::Int(i) => Fast::Int(*i.inner()),
            LiteralValue::UInt(u) => Fast::UInt(*u.inner()),
            LiteralValue::Double(d) => Fast::Double(*d.inner()),
            LiteralValue::String(s) => Fast::Str(s.inner().to_string()),
            LiteralValue::Bytes(_) => return None,
        },
        Ast::Ident(name) => Fast::Var(name.clone()),
        Ast::Select(select) => {
            Fast::Select { operand: boxed(&select.operand)?, field: select.field.clone(), test: select.test }
        }
        Ast::Call(call) => {
            let name = call.func_name.as_str();
            match (call.target.as_deref(), call.args.as_slice()) {
                (None, [a]) => match name {
                    operators::LOGICAL_NOT => Fast::Not(boxed(a)?),
                    "size" => Fast::Size(boxed(a)?),
                    _ => return None,
                },
                (None, [a, b]) => {
                    let (a, b) = (boxed(a)?, boxed(b)?);
                    match name {
                        operators::LOGICAL_AND => Fast::And(a, b),
                        operators::LOGICAL_OR => Fast::Or(a, b),
                        operators::INDEX => Fast::Index(a, b),
                        operators::EQUALS => Fast::Compare(Op::Eq, a, b),
                        operators::NOT_EQUALS => Fast::Compare(Op::Ne, a, b),
                        operators::LESS => Fast::Compare(Op::Lt, a, b),
                        operators::LESS_EQUALS => Fast::Compare(Op::Le, a, b),
                        operators::GREATER => Fast::Compare(Op::Gt, a, b),
                        operators::GREATER_EQUALS => Fast::Compare(Op::Ge, a, b),
                        _ => return None,
                    }
                }
                (None, [c, a, b]) if name == operators::CONDITIONAL => {
                    Fast::Cond(boxed(c)?, boxed(a)?, boxed(b)?)
                }
                (Some(target), []) if name == "size" => Fast::Size(boxed(target)?),
                (Some(target), [arg]) => {
                    let test = match name {
                        "startsWith" => TextTest::StartsWith,
                        "endsWith" => TextTest::EndsWith,
                        "contains" => TextTest::Contains,
                        _ => return None,
                    };
                    Fast::Text(test, boxed(target)?, boxed(arg)?)
                }
                _ => return None,
            }
        }
        Ast::Comprehension(c) => {
            if c.iter_var2.is_some() {
                return None;
            }
            let (kind, body) = macro_of(c)?;
            Fast::Macro { kind, range: boxed(&c.iter_range)?, var: c.iter_var.clone(), body: boxed(body)? }
        }
        Ast::List(_) | Ast::Map(_) | Ast::Struct(_) | Ast::Unspecified => return None,
    })
}

/// Which macro cel expanded into `c` (its expanders' fixed shapes), and the expression it
/// applies to each element.
fn macro_of(c: &ComprehensionExpr) -> Option<(Macro, &IdedExpr)> {
    let is_accu = |node: &IdedExpr| matches!(&node.expr, Ast::Ident(name) if *name == c.accu_var);
    if !is_accu(&c.result) {
        return None;
    }
    let Ast::Call(step) = &c.loop_step.expr else { return None };
    if step.target.is_some() {
        return None;
    }
    match (&c.accu_init.expr, step.func_name.as_str(), step.args.as_slice()) {
        (Ast::Literal(LiteralValue::Boolean(b)), operators::LOGICAL_OR, [a, pred])
            if !*b.inner() && is_accu(a) =>
        {
            Some((Macro::Exists, pred))
        }
        (Ast::Literal(LiteralValue::Boolean(b)), operators::LOGICAL_AND, [a, pred])
            if *b.inner() && is_accu(a) =>
        {
            Some((Macro::All, pred))
        }
        (Ast::List(init), operators::CONDITIONAL, [pred, add, keep])
            if init.elements.is_empty() && is_accu(keep) =>
        {
            let element = appended(add, &c.accu_var)?;
            matches!(&element.expr, Ast::Ident(name) if *name == c.iter_var).then_some((Macro::Filter, pred))
        }
        (Ast::List(init), operators::ADD, _) if init.elements.is_empty() => {
            Some((Macro::Map, appended(&c.loop_step, &c.accu_var)?))
        }
        _ => None,
    }
}

/// `x` of `accu + [x]`.
fn appended<'e>(node: &'e IdedExpr, accu_var: &str) -> Option<&'e IdedExpr> {
    let Ast::Call(call) = &node.expr else { return None };
    match (call.func_name.as_str(), call.target.as_deref(), call.args.as_slice()) {
        (operators::ADD, None, [accu, list]) if matches!(&accu.expr, Ast::Ident(n) if n == accu_var) => {
            match &list.expr {
                Ast::List(list) if list.elements.len() == 1 && list.optional_indices.is_empty() => {
                    list.elements.first()
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// What an evaluation reads: the three variables, and those the macros around it bind.
struct Scope<'a> {
    context: &'a Map<String, Value>,
    output: &'a Value,
    parent: &'a Map<String, Value>,
    bound: Vec<(&'a str, V<'a>)>,
}

impl Fast {
    /// Its answer over the context, the parent's output and the parent (`{name, state}`):
    /// `Some` only when it is cel's answer and a boolean; `None` to ask cel.
    pub(super) fn holds(
        &self,
        context: &Map<String, Value>,
        output: &Value,
        parent: &Map<String, Value>,
    ) -> Option<bool> {
        let mut scope = Scope { context, output, parent, bound: Vec::new() };
        match self.eval(&mut scope)? {
            V::Bool(answer) => Some(answer),
            _ => None,
        }
    }

    fn eval<'a>(&'a self, s: &mut Scope<'a>) -> Option<V<'a>> {
        Some(match self {
            Fast::Null => V::Null,
            Fast::Bool(b) => V::Bool(*b),
            Fast::Int(i) => V::Int(*i),
            Fast::UInt(u) => V::UInt(*u),
            Fast::Double(d) => V::Double(*d),
            Fast::Str(text) => V::Str(text),
            Fast::Var(name) => match s.bound.iter().rev().find(|(bound, _)| bound == name) {
                Some((_, value)) => value.clone(),
                None => match name.as_str() {
                    "context" => V::Map(s.context),
                    "output" => of(s.output),
                    "parent" => V::Map(s.parent),
                    _ => return None,
                },
            },
            Fast::Select { operand, field, test } => match (operand.eval(s)?, test) {
                (V::Map(map), true) => V::Bool(map.contains_key(field)),
                (V::Map(map), false) => of(map.get(field)?),
                _ => return None,
            },
            Fast::Index(list, index) => match (list.eval(s)?, index.eval(s)?) {
                (V::List(items), V::Int(i)) => of(items.get(usize::try_from(i).ok()?)?),
                (V::Built(items), V::Int(i)) => items.into_iter().nth(usize::try_from(i).ok()?)?,
                (V::Map(map), V::Str(key)) => of(map.get(key)?),
                _ => return None,
            },
            Fast::Size(of_what) => V::Int(
                i64::try_from(match of_what.eval(s)? {
                    V::Str(text) => text.chars().count(),
                    V::List(items) => items.len(),
                    V::Built(items) => items.len(),
                    V::Map(map) => map.len(),
                    _ => return None,
                })
                .ok()?,
            ),
            Fast::Not(a) => V::Bool(!a.eval(s)?.boolean()?),
            Fast::And(a, b) => V::Bool(a.eval(s)?.boolean()? && b.eval(s)?.boolean()?),
            Fast::Or(a, b) => V::Bool(a.eval(s)?.boolean()? || b.eval(s)?.boolean()?),
            Fast::Cond(c, a, b) => match c.eval(s)?.boolean()? {
                true => a.eval(s)?,
                false => b.eval(s)?,
            },
            Fast::Compare(op, a, b) => V::Bool(compare(*op, &a.eval(s)?, &b.eval(s)?)?),
            Fast::Text(test, a, b) => match (a.eval(s)?, b.eval(s)?) {
                (V::Str(text), V::Str(part)) => V::Bool(match test {
                    TextTest::StartsWith => text.starts_with(part),
                    TextTest::EndsWith => text.ends_with(part),
                    TextTest::Contains => text.contains(part),
                }),
                _ => return None,
            },
            Fast::Macro { kind, range, var, body } => {
                let items: Box<dyn Iterator<Item = V<'a>>> = match range.eval(s)? {
                    V::List(items) => Box::new(items.iter().map(of)),
                    V::Built(items) => Box::new(items.into_iter()),
                    // A map's keys, strings and lists: left to cel.
                    _ => return None,
                };
                walk(*kind, items, var, body, s)?
            }
        })
    }
}

/// A macro over `items`, each bound to `var` for `body`.
fn walk<'a>(
    kind: Macro,
    items: Box<dyn Iterator<Item = V<'a>> + 'a>,
    var: &'a str,
    body: &'a Fast,
    s: &mut Scope<'a>,
) -> Option<V<'a>> {
    let mut built = Vec::new();
    for item in items {
        s.bound.push((var, item));
        let answer = body.eval(s);
        let (_, item) = s.bound.pop()?;
        let answer = answer?;
        match kind {
            Macro::Exists if answer.boolean()? => return Some(V::Bool(true)),
            Macro::All if !answer.boolean()? => return Some(V::Bool(false)),
            Macro::Exists | Macro::All => {}
            Macro::Filter => {
                if answer.boolean()? {
                    built.push(item);
                }
            }
            Macro::Map => built.push(answer),
        }
    }
    Some(match kind {
        Macro::Exists => V::Bool(false),
        Macro::All => V::Bool(true),
        Macro::Filter | Macro::Map => V::Built(built),
    })
}

impl V<'_> {
    fn boolean(&self) -> Option<bool> {
        match self {
            V::Bool(b) => Some(*b),
            _ => None,
        }
    }
}

/// `a op b` for operands of one kind; `None` for mixed kinds, lists, maps and NaN (left to cel).
fn compare(op: Op, a: &V<'_>, b: &V<'_>) -> Option<bool> {
    use std::cmp::Ordering;
    let equality = matches!(op, Op::Eq | Op::Ne);
    let order = match (a, b) {
        (V::Int(x), V::Int(y)) => x.cmp(y),
        (V::UInt(x), V::UInt(y)) => x.cmp(y),
        (V::Double(x), V::Double(y)) => x.partial_cmp(y)?,
        (V::Str(x), V::Str(y)) => x.cmp(y),
        (V::Bool(x), V::Bool(y)) if equality => x.cmp(y),
        (V::Null, V::Null) if equality => Ordering::Equal,
        _ => return None,
    };
    Some(match op {
        Op::Eq => order == Ordering::Equal,
        Op::Ne => order != Ordering::Equal,
        Op::Lt => order == Ordering::Less,
        Op::Le => order != Ordering::Greater,
        Op::Gt => order == Ordering::Greater,
        Op::Ge => order != Ordering::Less,
    })
}
