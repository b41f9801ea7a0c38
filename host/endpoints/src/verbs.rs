//! One module per Kubernetes verb; `dispatch` is the only place that matches on [`Verb`].
//! What they share has a module each: the request's scope (`request`: [`Ctx`]), its
//! negotiated encoding (`negotiation`), bodies (`decode`), responses (`respond`,
//! `protobuf_response`, `printing`, `list_stream`), selectors (`filter`), and the write
//! path of create, update, patch, apply and delete (`write`: decode → type check → field
//! validation and pruning → prepare (the kind's strategy, `crate::kinds::Kind`) →
//! admission and validation (422) → store (CAS) → encode).

mod apply;
mod create;
mod decode;
mod delete;
mod delete_collection;
mod filter;
mod get;
mod jsonpatch;
mod list;
mod list_stream;
mod managed;
mod negotiation;
mod pages;
mod patch;
mod printing;
mod protobuf_response;
mod request;
mod respond;
mod scale;
mod token;
mod update;
mod watch;
mod write;

use bytes::Bytes;
use http::Response;
use wasmgate_apimachinery::request_info::Verb;
use wasmgate_apimachinery::status::Status;

use crate::body::Body;
use crate::error::ApiResult;
pub(crate) use crate::kinds::Obj;
use crate::object::meta;
pub(crate) use crate::verbs::negotiation::Negotiated;
pub(crate) use crate::verbs::protobuf_response::serves_protobuf;
pub(crate) use filter::Filter;
pub(crate) use request::Ctx;
pub(crate) use respond::encode_json;
pub(crate) use write::cpu_bound;

/// Builds the request's context (its response encoding negotiated once), dispatches it to
/// its verb, and collects what it leaves for the response and the audit event.
pub(crate) async fn serve(r: crate::Request, body: Bytes) -> crate::Served {
    let encoding = Negotiated::new(
        &r.headers,
        &r.query,
        serves_protobuf(&r.rt, r.req.subresource.as_deref(), &r.req.version),
    );
    let mut ctx = Ctx {
        inner: r.server,
        rt: r.rt,
        req: r.req,
        query: r.query,
        headers: r.headers,
        encoding,
        warnings: Vec::new(),
        late_warnings: Default::default(),
        audit_annotations: Default::default(),
        user: r.user,
        applying: false,
    };
    let response = dispatch(&mut ctx, body).await;
    // Warnings go out with the response, whether it succeeded or not.
    let mut warnings = std::mem::take(&mut ctx.warnings);
    warnings.extend(std::mem::take(
        ctx.late_warnings
            .get_mut()
            .unwrap_or_else(|p| p.into_inner()),
    ));
    let audit_annotations = std::mem::take(
        ctx.audit_annotations
            .get_mut()
            .unwrap_or_else(|p| p.into_inner()),
    );
    crate::Served {
        response,
        warnings,
        audit_annotations,
    }
}

async fn dispatch(ctx: &mut Ctx, body: Bytes) -> ApiResult<Response<Body>> {
    if let Some(c) = ctx.rt.custom().cloned() {
        let Some(v) = c.version(&ctx.req.version) else {
            return Err(Status::not_found_path().into());
        };
        if let Some(w) = &v.deprecation_warning {
            ctx.warnings.push(w.clone());
        }
        if c.terminating && ctx.req.verb == Verb::Create {
            return Err(create::refused_while_terminating(&c.crd_name));
        }
    }
    // Each verb's future on the heap, at its own size: the verbs' state machines differ a
    // lot in size (a create's or an apply's is tens of KiB), and inline every request would
    // carry (and move) the largest; erased, they also keep the request stack's future type
    // shallow for its callers (internal requests come back through it).
    type VerbFuture<'a> =
        std::pin::Pin<Box<dyn std::future::Future<Output = ApiResult<Response<Body>>> + Send + 'a>>;
    let fut: VerbFuture<'_> = if ctx.req.subresource.as_deref() == Some("scale") {
        Box::pin(scale::scale(ctx, body))
    } else if ctx.req.subresource.as_deref() == Some("token") {
        Box::pin(token::create(ctx, body))
    } else {
        match ctx.req.verb {
            Verb::Get => Box::pin(get::get(ctx)),
            Verb::List => Box::pin(list::list(ctx)),
            Verb::Watch => Box::pin(watch::watch(ctx)),
            Verb::Create => Box::pin(create::create(ctx, body)),
            Verb::Update => Box::pin(update::update(ctx, body)),
            Verb::Patch => Box::pin(patch::patch(ctx, body)),
            Verb::Delete => Box::pin(delete::delete(ctx, body)),
            Verb::DeleteCollection => Box::pin(delete_collection::delete_collection(ctx, body)),
        }
    };
    fut.await
}
