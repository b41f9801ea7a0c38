//! The response encoding a request negotiated, once, when its context is built (kube's
//! `endpoints/handlers/negotiation`): the output (`Accept`: JSON, YAML, protobuf, `Table`,
//! `PartialObjectMetadata`), `?pretty`, and `?includeObject` for tables. A request whose
//! `Accept` nothing here serves is refused (`406`) only when it is answered with an object,
//! as kube does.

use http::{HeaderMap, header};
use wasmgate_apimachinery::media::{self, NotAcceptable, Output};
use wasmgate_apimachinery::options::Query;
use wasmgate_apimachinery::status::Status;
use wasmgate_apimachinery::table::IncludeObject;

use crate::error::ApiResult;
use crate::response::header_str;

/// What a request's response is encoded as.
#[derive(Debug, Clone)]
pub(crate) struct Negotiated {
    output: Result<Output, NotAcceptable>,
    pretty: bool,
    include_object: Result<IncludeObject, String>,
}

impl Negotiated {
    /// Negotiates from the request's headers and query; `protobuf`: whether the response
    /// may be protobuf (`Ctx::serves_protobuf`).
    pub(crate) fn new(headers: &HeaderMap, query: &Query, protobuf: bool) -> Negotiated {
        let accept = media::parse_accept(header_str(headers, header::ACCEPT));
        let endpoint = media::Endpoint {
            table: true,
            protobuf,
        };
        Negotiated {
            output: media::negotiate_output(&accept, endpoint),
            pretty: query.bool("pretty").ok().flatten().unwrap_or(false),
            include_object: IncludeObject::parse(query.get("includeObject")),
        }
    }

    /// The output, or `406 NotAcceptable`.
    pub(crate) fn output(&self) -> ApiResult<Output> {
        self.output.clone().map_err(|e| Status::from(e).into())
    }

    /// `?pretty`: indented JSON.
    pub(crate) fn pretty(&self) -> bool {
        self.pretty
    }

    /// `?includeObject` of a table, or `400`.
    pub(crate) fn include_object(&self) -> ApiResult<IncludeObject> {
        self.include_object
            .clone()
            .map_err(|e| Status::bad_request(e).into())
    }
}
