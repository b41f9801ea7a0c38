//! The vocabulary of the message tables: a [`Message`] and its [`Field`]s, each with its
//! wire [`Kind`], how it renders ([`Emit`]) and the message's [`Shape`].

/// How a field's value is encoded and rendered.
#[derive(Clone, Copy)]
pub(crate) enum Kind {
    /// `string`, must be UTF-8.
    String,
    /// `int32` varint (the low 32 bits, as Go keeps them).
    Int32,
    /// `int64` varint.
    Int64,
    /// `bool` varint.
    Bool,
    /// `double`, fixed64 (JSON numbers of `JSONSchemaProps`).
    Double,
    /// `bytes`, standard base64 in JSON (`caBundle`).
    Bytes,
    /// A singular embedded message; occurrences merge.
    Message(&'static Message),
    /// An embedded message whose fields Go's JSON shows in the parent object (a struct
    /// embedded with `json:""`: `RuleWithOperations.Rule`).
    Inline(&'static Message),
    /// `metav1.Time`: seconds precision, `null` when zero.
    Time,
    /// `metav1.MicroTime`: microseconds precision, `null` when zero.
    MicroTime,
    /// A message `{ bytes raw = 1; }` whose bytes are JSON text, rendered as that JSON
    /// value: `metav1.FieldsV1`, apiextensions' `JSON`, `runtime.RawExtension`.
    RawJson,
    /// `repeated` [`Kind::RawJson`] (`enum` of a JSON schema).
    RawJsons,
    /// `map<string, string>`.
    StringMap,
    /// `map<string, bytes>`, values rendered as standard base64.
    BytesMap,
    /// `map<string, Message>`.
    MessageMap(&'static Message),
    /// `repeated string`.
    Strings,
    /// `repeated` embedded message.
    Messages(&'static Message),
}

/// When a field appears in the JSON (decoding), and whether it is a Go pointer (encoding).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Emit {
    /// Go value field tagged `omitempty`: left out when empty, zero, or absent. Always on
    /// the wire.
    OmitEmpty,
    /// Go pointer field: emitted whenever it was on the wire, even with a zero value; on
    /// the wire only when set (present and not `null` in JSON).
    IfSet,
    /// Go struct field, or a field without `omitempty`: always emitted (zero value if
    /// absent). Always on the wire.
    Always,
}

/// How a message shows in JSON.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Shape {
    /// A JSON object with the fields' names.
    Object,
    /// `{ repeated string items = 1; }` shown as the list itself (`ExtraValue`,
    /// `AttestationValue`); no items is `null`.
    List,
    /// `JSONSchemaPropsOrArray { schema = 1; jSONSchemas = 2; }`: the list when it has
    /// items, else the schema (or `null`).
    SchemaOrArray,
    /// `JSONSchemaPropsOrBool { allows = 1; schema = 2; }`: the schema when set, else the
    /// boolean.
    SchemaOrBool,
    /// `JSONSchemaPropsOrStringArray { schema = 1; property = 2; }`: the strings when
    /// there are any, else the schema (or `null`).
    SchemaOrStrings,
}

pub(crate) struct Field {
    pub(crate) number: u32,
    pub(crate) json: &'static str,
    pub(crate) kind: Kind,
    pub(crate) emit: Emit,
}

/// The most fields a message has (`JSONSchemaProps` has 44).
pub(crate) const MAX_FIELDS: usize = 48;

pub(crate) struct Message {
    /// The Go type name; for top-level messages also the kind.
    pub(crate) name: &'static str,
    /// In Go struct order, which is the JSON key order.
    pub(crate) fields: &'static [Field],
    /// How the message shows in JSON.
    pub(crate) shape: Shape,
    /// Indices into `fields` in field-number order (the order Go writes them), the first
    /// `fields.len()` of them.
    pub(crate) by_number: [u8; MAX_FIELDS],
}

impl Message {
    /// A message shown as a JSON object.
    pub(crate) const fn new(name: &'static str, fields: &'static [Field]) -> Message {
        Message::shaped(name, fields, Shape::Object)
    }

    /// A message with a JSON form of its own.
    pub(crate) const fn shaped(
        name: &'static str,
        fields: &'static [Field],
        shape: Shape,
    ) -> Message {
        Message {
            name,
            fields,
            shape,
            by_number: number_order(fields),
        }
    }

    /// The fields in the order Go writes them.
    pub(crate) fn in_number_order(&self) -> impl Iterator<Item = (usize, &'static Field)> + '_ {
        let fields = self.fields;
        self.by_number[..fields.len()].iter().filter_map(move |&i| {
            let i = usize::from(i);
            fields.get(i).map(|f| (i, f))
        })
    }
}

/// Insertion sort of the field indices by number, at compile time. A table with more
/// than [`MAX_FIELDS`] fields does not compile.
const fn number_order(fields: &[Field]) -> [u8; MAX_FIELDS] {
    assert!(
        fields.len() <= MAX_FIELDS,
        "too many fields for a message table"
    );
    let mut order = [0u8; MAX_FIELDS];
    let mut i = 0;
    while i < fields.len() {
        order[i] = i as u8;
        let mut j = i;
        while j > 0 && fields[order[j - 1] as usize].number > fields[order[j] as usize].number {
            let t = order[j - 1];
            order[j - 1] = order[j];
            order[j] = t;
            j -= 1;
        }
        i += 1;
    }
    order
}

pub(crate) const fn field(number: u32, json: &'static str, kind: Kind, emit: Emit) -> Field {
    Field {
        number,
        json,
        kind,
        emit,
    }
}

use Emit::OmitEmpty;

/// `ExtraValue` / `AttestationValue`: a string list wrapped in a message so that it can
/// be a map value.
pub(crate) static STRING_LIST: Message = Message::shaped(
    "StringList",
    &[field(1, "items", Kind::Strings, OmitEmpty)],
    Shape::List,
);
