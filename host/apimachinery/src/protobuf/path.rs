//! Where the decoder or encoder is, as a chain of stack frames; rendered only for errors
//! (`ConfigMap.metadata.ownerReferences[1].uid`, `ConfigMap.data[key]`).

use super::ProtobufError;

#[derive(Clone, Copy)]
enum Segment<'p> {
    Root(&'static str),
    Field(&'static str),
    Index(usize),
    Key(&'p str),
}

/// A position in a message, one stack frame per level; rendered only for errors.
pub(crate) struct Path<'p> {
    parent: Option<&'p Path<'p>>,
    segment: Segment<'p>,
}

impl<'p> Path<'p> {
    pub(crate) fn root(name: &'static str) -> Self {
        Path {
            parent: None,
            segment: Segment::Root(name),
        }
    }

    pub(crate) fn field(&'p self, name: &'static str) -> Path<'p> {
        Path {
            parent: Some(self),
            segment: Segment::Field(name),
        }
    }

    pub(crate) fn index(&'p self, index: usize) -> Path<'p> {
        Path {
            parent: Some(self),
            segment: Segment::Index(index),
        }
    }

    /// A map entry.
    pub(crate) fn key(&'p self, key: &'p str) -> Path<'p> {
        Path {
            parent: Some(self),
            segment: Segment::Key(key),
        }
    }

    pub(crate) fn render(&self) -> String {
        let mut segments = Vec::new();
        let mut current = Some(self);
        while let Some(path) = current {
            segments.push(path.segment);
            current = path.parent;
        }
        let mut out = String::new();
        for segment in segments.iter().rev() {
            match segment {
                Segment::Root(name) => out.push_str(name),
                Segment::Field(name) => {
                    out.push('.');
                    out.push_str(name);
                }
                Segment::Index(i) => {
                    out.push('[');
                    out.push_str(&i.to_string());
                    out.push(']');
                }
                Segment::Key(k) => {
                    out.push('[');
                    out.push_str(k);
                    out.push(']');
                }
            }
        }
        out
    }

    /// Wire data that does not decode.
    pub(crate) fn malformed(&self, message: impl Into<String>) -> ProtobufError {
        ProtobufError::Malformed {
            path: self.render(),
            message: message.into(),
        }
    }

    /// A JSON value that does not fit the field's protobuf type.
    pub(crate) fn unencodable(&self, message: impl Into<String>) -> ProtobufError {
        ProtobufError::Unencodable {
            path: self.render(),
            message: message.into(),
        }
    }
}
