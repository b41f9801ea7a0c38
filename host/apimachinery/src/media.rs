//! Content negotiation (`ENC-01`..`ENC-05`, `ENC-08`, `TABLE-01`, `TABLE-03`, `TABLE-04`,
//! `GAP-07`). Media-type parameters are matched by name, never by position.

/// A parsed media type: `type/subtype;k=v;…`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaType {
    /// `type/subtype`, lower case.
    pub essence: String,
    /// Parameters, names lower case, in order.
    pub params: Vec<(String, String)>,
}

impl MediaType {
    /// Parses one media type.
    pub fn parse(s: &str) -> Option<MediaType> {
        let mut parts = s.split(';');
        let essence = parts.next()?.trim().to_ascii_lowercase();
        if essence.is_empty() || !essence.contains('/') {
            return None;
        }
        let params = parts
            .filter_map(|p| {
                let (k, v) = p.split_once('=')?;
                Some((
                    k.trim().to_ascii_lowercase(),
                    v.trim().trim_matches('"').to_owned(),
                ))
            })
            .collect();
        Some(MediaType { essence, params })
    }

    /// A parameter's value.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Parses an `Accept` header into its media ranges, in the client's order (q-values of 0
/// drop a range; other q-values are ignored, as kube-apiserver does).
pub fn parse_accept(header: Option<&str>) -> Vec<MediaType> {
    let Some(h) = header.filter(|h| !h.trim().is_empty()) else {
        return Vec::new();
    };
    h.split(',')
        .filter_map(MediaType::parse)
        .filter(|m| m.param("q") != Some("0"))
        .collect()
}

/// How an object or list response is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// JSON.
    Json,
    /// YAML.
    Yaml,
    /// Kubernetes protobuf (`ENC-04`): built-in kinds only.
    Protobuf,
    /// `meta.k8s.io` Table, with this version (`v1` or `v1beta1`); JSON only, as in kube.
    Table(MetaVersion),
    /// `PartialObjectMetadata` / `PartialObjectMetadataList`, in JSON or protobuf (for
    /// every resource, custom ones included, as kube serves them).
    PartialObjectMetadata(MetaVersion, Encoding),
}

impl Output {
    /// Whether the response is protobuf.
    pub fn is_protobuf(self) -> bool {
        matches!(
            self,
            Output::Protobuf | Output::PartialObjectMetadata(_, Encoding::Protobuf)
        )
    }
}

/// The encoding of a `PartialObjectMetadata` response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// `application/json`.
    Json,
    /// `application/vnd.kubernetes.protobuf`.
    Protobuf,
}

/// A `meta.k8s.io` version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaVersion {
    /// `meta.k8s.io/v1`.
    V1,
    /// `meta.k8s.io/v1beta1`.
    V1beta1,
}

impl MetaVersion {
    /// `meta.k8s.io/<v>`.
    pub fn api_version(self) -> &'static str {
        match self {
            MetaVersion::V1 => "meta.k8s.io/v1",
            MetaVersion::V1beta1 => "meta.k8s.io/v1beta1",
        }
    }
}

/// No acceptable media type: 406 with this message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("only the following media types are accepted: {accepted}")]
pub struct NotAcceptable {
    /// What the server can produce here.
    pub accepted: &'static str,
}

/// The media type of Kubernetes protobuf.
pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

fn json_like(essence: &str) -> bool {
    matches!(essence, "application/json" | "*/*" | "application/*")
}

/// What an endpoint can answer besides JSON and YAML.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint {
    /// The resource can be rendered as a Table (every resource can; aggregated ones
    /// might not).
    pub table: bool,
    /// The resource's kind has a protobuf form (built-in kinds; never custom resources,
    /// `ENC-05`).
    pub protobuf: bool,
}

/// Chooses the response encoding for objects and lists: the first media range of
/// `accept` the endpoint can answer, as kube-apiserver's negotiation does (`ENC-02`). A
/// protobuf range is skipped where there is no protobuf (`ENC-05`: the client's JSON
/// fallback, or 406); `as=Table` is JSON only, `as=PartialObjectMetadata[List]` JSON or
/// protobuf for every resource.
pub fn negotiate_output(accept: &[MediaType], endpoint: Endpoint) -> Result<Output, NotAcceptable> {
    if accept.is_empty() {
        return Ok(Output::Json);
    }
    for m in accept {
        let version = match (m.param("g"), m.param("v")) {
            (Some("meta.k8s.io"), Some("v1")) => Some(MetaVersion::V1),
            (Some("meta.k8s.io"), Some("v1beta1")) => Some(MetaVersion::V1beta1),
            _ => None,
        };
        match (m.essence.as_str(), m.param("as")) {
            ("application/json", Some("Table")) => {
                if let (Some(v), true) = (version, endpoint.table) {
                    return Ok(Output::Table(v));
                }
            }
            (
                essence @ ("application/json" | PROTOBUF),
                Some("PartialObjectMetadata") | Some("PartialObjectMetadataList"),
            ) => {
                if let Some(v) = version {
                    let encoding = if essence == PROTOBUF {
                        Encoding::Protobuf
                    } else {
                        Encoding::Json
                    };
                    return Ok(Output::PartialObjectMetadata(v, encoding));
                }
            }
            (_, Some(_)) => {}
            (e, None) if json_like(e) => return Ok(Output::Json),
            ("application/yaml", None) => return Ok(Output::Yaml),
            (PROTOBUF, None) if endpoint.protobuf => return Ok(Output::Protobuf),
            _ => {}
        }
    }
    Err(NotAcceptable {
        accepted: "application/json, application/yaml, application/vnd.kubernetes.protobuf",
    })
}

/// Whether a `Status` (an error, or a delete's success) goes out in protobuf: when the
/// first media range kube-apiserver's error writer can answer is protobuf. That writer
/// negotiates without transformations (a range with `as=` is skipped) among JSON, YAML
/// and protobuf, and answers JSON when none fits; YAML errors are answered in JSON here.
pub fn status_in_protobuf(accept: &[MediaType]) -> bool {
    for m in accept {
        if m.param("as").is_some() || m.param("g").is_some() || m.param("v").is_some() {
            continue;
        }
        match m.essence.as_str() {
            PROTOBUF => return true,
            e if json_like(e) || e == "application/yaml" => return false,
            _ => {}
        }
    }
    false
}

/// Discovery documents: aggregated (v2 or v2beta1) or legacy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiscoveryOutput {
    /// `apidiscovery.k8s.io/v2`.
    AggregatedV2,
    /// `apidiscovery.k8s.io/v2beta1`.
    AggregatedV2beta1,
    /// `APIVersions` / `APIGroupList`.
    Legacy,
}

impl DiscoveryOutput {
    /// The Content-Type of the reply (kubectl parses by it).
    pub fn content_type(self) -> &'static str {
        match self {
            DiscoveryOutput::AggregatedV2 => {
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
            }
            DiscoveryOutput::AggregatedV2beta1 => {
                "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
            }
            DiscoveryOutput::Legacy => "application/json",
        }
    }
}

/// Chooses the discovery encoding for `/api` and `/apis`.
pub fn negotiate_discovery(accept: &[MediaType]) -> Result<DiscoveryOutput, NotAcceptable> {
    if accept.is_empty() {
        return Ok(DiscoveryOutput::Legacy);
    }
    for m in accept {
        match (
            m.essence.as_str(),
            m.param("as"),
            m.param("g"),
            m.param("v"),
        ) {
            (
                "application/json",
                Some("APIGroupDiscoveryList"),
                Some("apidiscovery.k8s.io"),
                Some("v2"),
            ) => {
                return Ok(DiscoveryOutput::AggregatedV2);
            }
            (
                "application/json",
                Some("APIGroupDiscoveryList"),
                Some("apidiscovery.k8s.io"),
                Some("v2beta1"),
            ) => return Ok(DiscoveryOutput::AggregatedV2beta1),
            (e, None, _, _) if json_like(e) => return Ok(DiscoveryOutput::Legacy),
            _ => {}
        }
    }
    Err(NotAcceptable {
        accepted: "application/json, application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
    })
}

/// The encoding of a request body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyType {
    /// JSON.
    Json,
    /// YAML.
    Yaml,
    /// Kubernetes protobuf (`k8s\0` envelope).
    Protobuf,
}

/// The patch type, from the PATCH Content-Type (`PATCH-01`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// `application/json-patch+json`.
    Json,
    /// `application/merge-patch+json`.
    Merge,
    /// `application/strategic-merge-patch+json`.
    StrategicMerge,
    /// `application/apply-patch+yaml`.
    Apply,
}

impl PatchType {
    /// The media type.
    pub fn media_type(self) -> &'static str {
        match self {
            PatchType::Json => "application/json-patch+json",
            PatchType::Merge => "application/merge-patch+json",
            PatchType::StrategicMerge => "application/strategic-merge-patch+json",
            PatchType::Apply => "application/apply-patch+yaml",
        }
    }
}

/// An unsupported Content-Type: 415 with this message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the body of the request was in an unknown format - accepted media types include: {accepted}"
)]
pub struct UnsupportedMediaType {
    /// What the server accepts here.
    pub accepted: &'static str,
}

/// The body type of a POST or PUT. A missing Content-Type is taken as JSON.
pub fn body_type(content_type: Option<&str>) -> Result<BodyType, UnsupportedMediaType> {
    let Some(m) = content_type.and_then(MediaType::parse) else {
        return Ok(BodyType::Json);
    };
    match m.essence.as_str() {
        "application/json" => Ok(BodyType::Json),
        "application/yaml" => Ok(BodyType::Yaml),
        "application/vnd.kubernetes.protobuf" => Ok(BodyType::Protobuf),
        _ => Err(UnsupportedMediaType {
            accepted: "application/json, application/yaml, application/vnd.kubernetes.protobuf",
        }),
    }
}

/// The patch type of a PATCH.
pub fn patch_type(content_type: Option<&str>) -> Result<PatchType, UnsupportedMediaType> {
    let err = UnsupportedMediaType {
        accepted: "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml",
    };
    let m = content_type.and_then(MediaType::parse).ok_or(err.clone())?;
    match m.essence.as_str() {
        "application/json-patch+json" => Ok(PatchType::Json),
        "application/merge-patch+json" => Ok(PatchType::Merge),
        "application/strategic-merge-patch+json" => Ok(PatchType::StrategicMerge),
        "application/apply-patch+yaml" => Ok(PatchType::Apply),
        _ => Err(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
    const AGG: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

    /// A built-in resource: Table and protobuf.
    const BUILTIN: Endpoint = Endpoint {
        table: true,
        protobuf: true,
    };
    /// A custom resource: Table, no protobuf.
    const CUSTOM: Endpoint = Endpoint {
        table: true,
        protobuf: false,
    };

    fn negotiate(accept: &str, endpoint: Endpoint) -> Result<Output, NotAcceptable> {
        negotiate_output(&parse_accept(Some(accept)), endpoint)
    }

    #[test]
    fn enc_08_table_params_in_any_order() {
        assert_eq!(
            negotiate(TABLE, BUILTIN),
            Ok(Output::Table(MetaVersion::V1))
        );
        let seed = "application/json;as=Table;g=meta.k8s.io;v=v1beta1, application/json";
        assert_eq!(
            negotiate(seed, BUILTIN),
            Ok(Output::Table(MetaVersion::V1beta1))
        );
        let no_table = Endpoint {
            table: false,
            protobuf: true,
        };
        assert_eq!(negotiate(TABLE, no_table), Ok(Output::Json));
    }

    #[test]
    fn enc_02_fallbacks_and_406() {
        let pb = "application/vnd.kubernetes.protobuf,application/json";
        assert_eq!(negotiate(pb, CUSTOM), Ok(Output::Json));
        assert_eq!(negotiate("application/yaml", BUILTIN), Ok(Output::Yaml));
        assert_eq!(negotiate("*/*", BUILTIN), Ok(Output::Json));
        assert_eq!(
            negotiate_output(&parse_accept(None), BUILTIN),
            Ok(Output::Json)
        );
        assert!(negotiate("text/html", BUILTIN).is_err());
        assert!(negotiate("application/json;as=Table;g=meta.k8s.io;v=v9", BUILTIN).is_err());
    }

    /// ENC-04: protobuf for built-in kinds, first choice or fallback, with parameters.
    #[test]
    fn enc_04_protobuf_negotiated() {
        assert_eq!(negotiate(PROTOBUF, BUILTIN), Ok(Output::Protobuf));
        let pb = "application/vnd.kubernetes.protobuf, application/json";
        assert_eq!(negotiate(pb, BUILTIN), Ok(Output::Protobuf));
        let json_first = "application/json, application/vnd.kubernetes.protobuf";
        assert_eq!(negotiate(json_first, BUILTIN), Ok(Output::Json));
        let fallback = "text/html, application/vnd.kubernetes.protobuf;q=0.5";
        assert_eq!(negotiate(fallback, BUILTIN), Ok(Output::Protobuf));
        assert_eq!(
            negotiate("text/html", BUILTIN).map_err(|e| e.accepted),
            Err("application/json, application/yaml, application/vnd.kubernetes.protobuf")
        );
        assert!(Output::Protobuf.is_protobuf());
        assert!(!Output::Json.is_protobuf());
    }

    /// ENC-05: no protobuf for custom resources: 406 alone, JSON as the fallback.
    #[test]
    fn enc_05_no_protobuf_for_custom_resources() {
        let e = negotiate(PROTOBUF, CUSTOM).unwrap_err();
        assert_eq!(
            e.to_string(),
            "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
        );
        let pb = "application/vnd.kubernetes.protobuf,application/json";
        assert_eq!(negotiate(pb, CUSTOM), Ok(Output::Json));
    }

    /// ENC-04/ENC-05: Table is JSON only (kube's `AllowsMediaTypeTransform`); metadata
    /// in protobuf for every resource, custom ones included.
    #[test]
    fn enc_04_transforms_in_protobuf() {
        let pb_table = "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1";
        assert!(negotiate(pb_table, BUILTIN).is_err());
        assert_eq!(
            negotiate(&format!("{pb_table}, application/json"), BUILTIN),
            Ok(Output::Json)
        );
        let metadata = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
        for endpoint in [BUILTIN, CUSTOM] {
            assert_eq!(
                negotiate(metadata, endpoint),
                Ok(Output::PartialObjectMetadata(
                    MetaVersion::V1,
                    Encoding::Protobuf
                ))
            );
        }
        let json_metadata = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1";
        assert_eq!(
            negotiate(json_metadata, CUSTOM),
            Ok(Output::PartialObjectMetadata(
                MetaVersion::V1beta1,
                Encoding::Json
            ))
        );
    }

    /// ENC-04: errors go out in protobuf when protobuf is the first range the error
    /// writer can answer.
    #[test]
    fn enc_04_status_encoding() {
        let pb = |a: &str| status_in_protobuf(&parse_accept(Some(a)));
        assert!(pb(PROTOBUF));
        assert!(pb("application/vnd.kubernetes.protobuf, application/json"));
        assert!(pb("text/html, application/vnd.kubernetes.protobuf"));
        assert!(!pb("application/json, application/vnd.kubernetes.protobuf"));
        assert!(!pb("*/*"));
        assert!(!pb("application/yaml"));
        assert!(!pb(
            "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1"
        ));
        assert!(!pb(
            "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1, application/json"
        ));
        assert!(!status_in_protobuf(&parse_accept(None)));
    }

    #[test]
    fn gap_01_aggregated_discovery() {
        assert_eq!(
            negotiate_discovery(&parse_accept(Some(AGG))),
            Ok(DiscoveryOutput::AggregatedV2)
        );
        assert_eq!(
            negotiate_discovery(&parse_accept(Some("application/json, */*"))),
            Ok(DiscoveryOutput::Legacy)
        );
        assert!(negotiate_discovery(&parse_accept(Some("application/xml"))).is_err());
    }

    #[test]
    fn patch_01_content_types() {
        assert_eq!(
            patch_type(Some("application/merge-patch+json")),
            Ok(PatchType::Merge)
        );
        assert_eq!(
            patch_type(Some(
                "application/strategic-merge-patch+json; charset=utf-8"
            )),
            Ok(PatchType::StrategicMerge)
        );
        assert!(patch_type(Some("application/json")).is_err());
        assert!(patch_type(None).is_err());
        assert_eq!(
            body_type(Some("application/vnd.kubernetes.protobuf")),
            Ok(BodyType::Protobuf)
        );
        assert!(body_type(Some("text/plain")).is_err());
    }
}
