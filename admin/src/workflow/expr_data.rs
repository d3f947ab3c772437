//! The data a condition reads, as CEL sees it — made on access, not converted up front.
//!
//! A context may hold 1 MiB of JSON. Converting all of it into CEL's value tree for every
//! evaluation cost ~45 ms at that size (cel 0.15 builds a boxed value per JSON value), while an
//! expression such as `output.rows > 0` reads one number. [`val`] wraps the JSON in place instead
//! (cel's documented way for "a large backing object where member access … is computed lazily"):
//! objects and arrays are [`JsonMap`] and [`JsonList`], which make an element's CEL value only
//! when the expression reaches it; numbers, strings, booleans and null become CEL's own values
//! (strings borrowed). So an evaluation costs what the expression touches — a field is
//! microseconds at any context size, and a comprehension is linear in the list it walks.
//!
//! Semantics are CEL's over JSON, as before: objects are `map(string, dyn)`, whole numbers `int`
//! (past `i64`, `uint`), other numbers `double`. Equality is structural and compares numbers as
//! CEL does (`1 == 1.0`). One asymmetry is cel's, not ours: its built-in list and map compare equal
//! only to its own kinds, so a list or map **literal** (or a `map`/`filter` result) on the left of
//! `==` would never equal data on the right — `expr::check` refuses that form when the workflow is
//! saved and says to put the data on the left.

use std::sync::OnceLock;

use cel::ExecutionError;
use cel::common::traits::{self, Adder, Container, Indexer, Iterable, Sizer, Zeroer};
use cel::common::types::{
    self, CelBool, CelDouble, CelInt, CelList, CelNull, CelString, CelUInt, Kind, Type,
};
use cel::common::value::{CowVal, Val};
use serde_json::{Map, Value};

/// A JSON number as CEL sees it: whole numbers `int` (past `i64`, `uint`), others `double`.
pub(super) enum Number {
    Int(i64),
    UInt(u64),
    Double(f64),
}

impl Number {
    pub(super) fn of(n: &serde_json::Number) -> Number {
        match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Number::Int(i),
            (None, Some(u)) => Number::UInt(u),
            (None, None) => Number::Double(n.as_f64().unwrap_or(f64::NAN)),
        }
    }
}

/// `json` as a CEL value borrowing it.
pub(super) fn val(json: &Value) -> Box<dyn Val + '_> {
    match json {
        Value::Null => Box::new(CelNull),
        Value::Bool(b) => Box::new(CelBool::from(*b)),
        Value::Number(n) => match Number::of(n) {
            Number::Int(i) => Box::new(CelInt::from(i)),
            Number::UInt(u) => Box::new(CelUInt::from(u)),
            Number::Double(d) => Box::new(CelDouble::from(d)),
        },
        Value::String(s) => Box::new(CelString::from(s.as_str())),
        Value::Array(items) => Box::new(JsonList::new(items)),
        Value::Object(map) => Box::new(JsonMap::new(map)),
    }
}

/// A JSON object as a CEL `map`: fields are looked up in the JSON when read.
#[derive(Debug)]
pub(super) struct JsonMap<'a> {
    map: &'a Map<String, Value>,
    /// The keys as CEL strings, made when a comprehension first walks them.
    keys: OnceLock<Vec<Box<dyn Val + 'a>>>,
}

impl<'a> JsonMap<'a> {
    /// `map`, unread.
    pub(super) fn new(map: &'a Map<String, Value>) -> Self {
        Self { map, keys: OnceLock::new() }
    }
}

/// Whether `key` is of a type a map may be indexed with (`string`, `int`, `uint`, `bool`, or a
/// `double` CEL converts), so a miss is "no such key" rather than a type error.
fn lookup_key(key: &dyn Val) -> bool {
    matches!(key.get_type().kind(), Kind::String | Kind::Int | Kind::UInt | Kind::Boolean | Kind::Double)
}

impl Val for JsonMap<'_> {
    fn get_type(&self) -> &Type {
        &types::MAP_TYPE
    }

    fn cel_type() -> &'static Type {
        &types::MAP_TYPE
    }

    fn as_container(&self) -> Option<&dyn Container> {
        Some(self)
    }

    fn as_indexer<'b, 'v>(&'b self) -> Option<&'b (dyn Indexer + 'v)>
    where
        Self: 'v,
    {
        Some(self)
    }

    fn as_iterable<'b, 'v>(&'b self) -> Option<&'b (dyn Iterable + 'v)>
    where
        Self: 'v,
    {
        Some(self)
    }

    fn as_sizer(&self) -> Option<&dyn Sizer> {
        Some(self)
    }

    fn as_zeroer(&self) -> Option<&dyn Zeroer> {
        Some(self)
    }

    /// Equal to any CEL map with the same keys and equal values.
    fn equals(&self, other: &dyn Val) -> bool {
        if other.get_type().kind() != Kind::Map
            || other.as_sizer().map(|s| *s.size().inner()) != Some(len(self.map.len()))
        {
            return false;
        }
        let Some(other) = other.as_indexer() else { return false };
        self.map.iter().all(|(key, value)| {
            other.get(&CelString::from(key.as_str())).is_ok_and(|theirs| val(value).equals(theirs.as_ref()))
        })
    }

    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v>
    where
        Self: 'v,
    {
        Box::new(JsonMap::new(self.map))
    }
}

impl Container for JsonMap<'_> {
    fn contains(&self, key: &dyn Val) -> Result<bool, ExecutionError> {
        match key.downcast_ref::<CelString<'_>>() {
            Some(key) => Ok(self.map.contains_key(key.inner())),
            None if lookup_key(key) => Ok(false),
            None => Err(ExecutionError::UnsupportedKeyType(key.try_into().unwrap_or(cel::Value::Null))),
        }
    }
}

impl Indexer for JsonMap<'_> {
    fn get<'b, 'v>(&'b self, key: &dyn Val) -> Result<CowVal<'b, 'v>, ExecutionError>
    where
        Self: 'v,
    {
        match key.downcast_ref::<CelString<'_>>() {
            Some(name) => match self.map.get(name.inner()) {
                Some(value) => Ok(CowVal::Owned(val(value))),
                None => Err(ExecutionError::NoSuchKey(std::sync::Arc::new(name.inner().to_owned()))),
            },
            // JSON keys are strings: a number or a boolean names nothing.
            None if lookup_key(key) => {
                let shown = cel::Value::try_from(key).map(|v| format!("{v:?}")).unwrap_or_default();
                Err(ExecutionError::NoSuchKey(std::sync::Arc::new(shown)))
            }
            None => Err(ExecutionError::UnexpectedType {
                got: key.get_type().name().to_owned(),
                want: "map key".to_owned(),
            }),
        }
    }

    fn steal<'v>(self: Box<Self>, key: &dyn Val) -> Result<Box<dyn Val + 'v>, ExecutionError>
    where
        Self: 'v,
    {
        self.get(key).map(CowVal::into_owned)
    }
}

impl Iterable for JsonMap<'_> {
    fn iter<'b, 'v>(&'b self) -> Box<dyn traits::Iterator<'b, 'v> + 'b>
    where
        Self: 'v,
    {
        let keys = self.keys.get_or_init(|| {
            self.map.keys().map(|k| Box::new(CelString::from(k.as_str())) as Box<dyn Val>).collect()
        });
        Box::new(Elements { items: keys, at: 0 })
    }
}

impl Sizer for JsonMap<'_> {
    fn size(&self) -> CelInt {
        len(self.map.len()).into()
    }
}

impl Zeroer for JsonMap<'_> {
    fn is_zero_value(&self) -> bool {
        self.map.is_empty()
    }
}

/// A JSON array as a CEL `list`: an index or `size` reads the JSON; `in`, `+` and the
/// comprehensions use a list of its elements, each made as [`val`] does, built once when first
/// needed.
#[derive(Debug)]
pub(super) struct JsonList<'a> {
    items: &'a [Value],
    list: OnceLock<CelList<'a>>,
}

impl<'a> JsonList<'a> {
    /// `items`, unread.
    pub(super) fn new(items: &'a [Value]) -> Self {
        Self { items, list: OnceLock::new() }
    }

    fn list(&self) -> &CelList<'a> {
        self.list.get_or_init(|| CelList::from(self.items.iter().map(val).collect::<Vec<_>>()))
    }
}

impl Val for JsonList<'_> {
    fn get_type(&self) -> &Type {
        &types::LIST_TYPE
    }

    fn cel_type() -> &'static Type {
        &types::LIST_TYPE
    }

    fn as_adder<'b, 'v>(&'b self) -> Option<&'b (dyn Adder + 'v)>
    where
        Self: 'v,
    {
        Some(self)
    }

    fn as_container(&self) -> Option<&dyn Container> {
        Some(self)
    }

    fn as_indexer<'b, 'v>(&'b self) -> Option<&'b (dyn Indexer + 'v)>
    where
        Self: 'v,
    {
        Some(self)
    }

    fn as_iterable<'b, 'v>(&'b self) -> Option<&'b (dyn Iterable + 'v)>
    where
        Self: 'v,
    {
        Some(self)
    }

    fn as_sizer(&self) -> Option<&dyn Sizer> {
        Some(self)
    }

    fn as_zeroer(&self) -> Option<&dyn Zeroer> {
        Some(self)
    }

    /// Equal to any CEL list of the same length with equal elements in order.
    fn equals(&self, other: &dyn Val) -> bool {
        if other.get_type().kind() != Kind::List
            || other.as_sizer().map(|s| *s.size().inner()) != Some(len(self.items.len()))
        {
            return false;
        }
        let Some(other) = other.as_iterable() else { return false };
        let mut theirs = other.iter();
        self.items.iter().all(|item| theirs.next().is_some_and(|t| val(item).equals(t)))
    }

    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v>
    where
        Self: 'v,
    {
        Box::new(JsonList::new(self.items))
    }
}

impl Adder for JsonList<'_> {
    fn add<'b, 'v>(&'b self, rhs: &(dyn Val + 'v)) -> Result<CowVal<'b, 'v>, ExecutionError>
    where
        Self: 'v,
    {
        self.list().add(rhs)
    }
}

impl Container for JsonList<'_> {
    fn contains(&self, value: &dyn Val) -> Result<bool, ExecutionError> {
        Ok(self.items.iter().any(|item| val(item).equals(value)))
    }
}

impl Indexer for JsonList<'_> {
    fn get<'b, 'v>(&'b self, idx: &dyn Val) -> Result<CowVal<'b, 'v>, ExecutionError>
    where
        Self: 'v,
    {
        let at = match idx.get_type().kind() {
            Kind::Int => idx.downcast_ref::<CelInt>().map(|i| usize::try_from(*i.inner()).ok()),
            Kind::UInt => idx.downcast_ref::<CelUInt>().map(|u| usize::try_from(*u.inner()).ok()),
            // A whole double indexes like an int (CEL's rule); any other is out of bounds.
            Kind::Double => idx.downcast_ref::<CelDouble>().map(|d| {
                let d = *d.inner();
                (d.fract() == 0.0 && (0.0..9.0e15).contains(&d)).then_some(d as usize)
            }),
            _ => None,
        };
        match at {
            Some(Some(at)) if at < self.items.len() => Ok(CowVal::Owned(val(&self.items[at]))),
            Some(_) => {
                Err(ExecutionError::IndexOutOfBounds(cel::Value::try_from(idx).unwrap_or(cel::Value::Null)))
            }
            None => Err(ExecutionError::UnexpectedType {
                got: idx.get_type().name().to_owned(),
                want: "int|uint|double".to_owned(),
            }),
        }
    }

    fn steal<'v>(self: Box<Self>, idx: &dyn Val) -> Result<Box<dyn Val + 'v>, ExecutionError>
    where
        Self: 'v,
    {
        self.get(idx).map(CowVal::into_owned)
    }
}

impl Iterable for JsonList<'_> {
    fn iter<'b, 'v>(&'b self) -> Box<dyn traits::Iterator<'b, 'v> + 'b>
    where
        Self: 'v,
    {
        Box::new(Elements { items: self.list().inner(), at: 0 })
    }
}

impl Sizer for JsonList<'_> {
    fn size(&self) -> CelInt {
        len(self.items.len()).into()
    }
}

impl Zeroer for JsonList<'_> {
    fn is_zero_value(&self) -> bool {
        self.items.is_empty()
    }
}

/// Lends a slice's values one by one.
struct Elements<'b, 'a> {
    items: &'b [Box<dyn Val + 'a>],
    at: usize,
}

impl<'b, 'a: 'v, 'v> traits::Iterator<'b, 'v> for Elements<'b, 'a> {
    fn next(&mut self) -> Option<&'b (dyn Val + 'v)> {
        let item = self.items.get(self.at)?;
        self.at += 1;
        Some(item.as_ref())
    }
}

/// A length as CEL's `int` (a JSON document of 1 MiB holds far fewer than `i64::MAX` values).
fn len(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
