//! Function declarations: the CEL standard library, the strings (v2) and sets extensions,
//! optionals, and the Kubernetes list and regex libraries, as kube-apiserver 1.32 declares
//! them for CRD validation rules. Signatures only; [`crate::eval`] implements them.

use std::collections::HashMap;
use std::sync::LazyLock;

use crate::types::Ty;

/// One overload of a function.
#[derive(Debug)]
pub(crate) struct Overload {
    /// cel-go's overload id (the cost model keys on it).
    pub(crate) id: &'static str,
    /// Called as `target.f(args)`.
    pub(crate) member: bool,
    /// Argument types, the target first for member overloads.
    pub(crate) args: Vec<Ty>,
    pub(crate) result: Ty,
}

/// Number of type parameters an overload may use (`A`, `B`, `K`, `V`).
pub(crate) const TYPE_PARAMS: u32 = 4;

const TABLE: &str = "
_?_:_ conditional g bool, A, A -> A
!_ logical_not g bool -> bool
-_ negate_int64 g int -> int
-_ negate_double g double -> double
@not_strictly_false not_strictly_false g bool -> bool
_==_ equals g A, A -> bool
_!=_ not_equals g A, A -> bool
_+_ add_int64 g int, int -> int
_+_ add_uint64 g uint, uint -> uint
_+_ add_double g double, double -> double
_+_ add_string g string, string -> string
_+_ add_bytes g bytes, bytes -> bytes
_+_ add_list g list(A), list(A) -> list(A)
_+_ add_timestamp_duration g timestamp, duration -> timestamp
_+_ add_duration_timestamp g duration, timestamp -> timestamp
_+_ add_duration_duration g duration, duration -> duration
_-_ subtract_int64 g int, int -> int
_-_ subtract_uint64 g uint, uint -> uint
_-_ subtract_double g double, double -> double
_-_ subtract_timestamp_timestamp g timestamp, timestamp -> duration
_-_ subtract_timestamp_duration g timestamp, duration -> timestamp
_-_ subtract_duration_duration g duration, duration -> duration
_*_ multiply_int64 g int, int -> int
_*_ multiply_uint64 g uint, uint -> uint
_*_ multiply_double g double, double -> double
_/_ divide_int64 g int, int -> int
_/_ divide_uint64 g uint, uint -> uint
_/_ divide_double g double, double -> double
_%_ modulo_int64 g int, int -> int
_%_ modulo_uint64 g uint, uint -> uint
_[_] index_list g list(A), int -> A
_[_] index_map g map(K, V), K -> V
_[?_] list_optindex_optional_int g list(V), int -> optional(V)
_[?_] map_optindex_optional_value g map(K, V), K -> optional(V)
_[?_] optional_list_optindex_optional_int g optional(list(V)), int -> optional(V)
_[?_] optional_map_optindex_optional_value g optional(map(K, V)), K -> optional(V)
@in in_list g A, list(A) -> bool
@in in_map g K, map(K, V) -> bool
size size_string g string -> int
size size_bytes g bytes -> int
size size_list g list(A) -> int
size size_map g map(K, V) -> int
size string_size m string -> int
size bytes_size m bytes -> int
size list_size m list(A) -> int
size map_size m map(K, V) -> int
type type g A -> type(A)
int int64_to_int64 g int -> int
int uint64_to_int64 g uint -> int
int double_to_int64 g double -> int
int string_to_int64 g string -> int
int timestamp_to_int64 g timestamp -> int
uint uint64_to_uint64 g uint -> uint
uint int64_to_uint64 g int -> uint
uint double_to_uint64 g double -> uint
uint string_to_uint64 g string -> uint
double double_to_double g double -> double
double int64_to_double g int -> double
double uint64_to_double g uint -> double
double string_to_double g string -> double
string string_to_string g string -> string
string int64_to_string g int -> string
string uint64_to_string g uint -> string
string double_to_string g double -> string
string bool_to_string g bool -> string
string bytes_to_string g bytes -> string
string timestamp_to_string g timestamp -> string
string duration_to_string g duration -> string
bytes bytes_to_bytes g bytes -> bytes
bytes string_to_bytes g string -> bytes
bool bool_to_bool g bool -> bool
bool string_to_bool g string -> bool
dyn to_dyn g A -> dyn
duration duration_to_duration g duration -> duration
duration string_to_duration g string -> duration
timestamp timestamp_to_timestamp g timestamp -> timestamp
timestamp string_to_timestamp g string -> timestamp
timestamp int64_to_timestamp g int -> timestamp
matches matches g string, string -> bool
matches matches_string m string, string -> bool
contains contains_string m string, string -> bool
startsWith starts_with_string m string, string -> bool
endsWith ends_with_string m string, string -> bool
getFullYear timestamp_to_year m timestamp -> int
getFullYear timestamp_to_year_with_tz m timestamp, string -> int
getMonth timestamp_to_month m timestamp -> int
getMonth timestamp_to_month_with_tz m timestamp, string -> int
getDayOfYear timestamp_to_day_of_year m timestamp -> int
getDayOfYear timestamp_to_day_of_year_with_tz m timestamp, string -> int
getDayOfMonth timestamp_to_day_of_month m timestamp -> int
getDayOfMonth timestamp_to_day_of_month_with_tz m timestamp, string -> int
getDate timestamp_to_day_of_month_1_based m timestamp -> int
getDate timestamp_to_day_of_month_1_based_with_tz m timestamp, string -> int
getDayOfWeek timestamp_to_day_of_week m timestamp -> int
getDayOfWeek timestamp_to_day_of_week_with_tz m timestamp, string -> int
getHours timestamp_to_hours m timestamp -> int
getHours timestamp_to_hours_with_tz m timestamp, string -> int
getHours duration_to_hours m duration -> int
getMinutes timestamp_to_minutes m timestamp -> int
getMinutes timestamp_to_minutes_with_tz m timestamp, string -> int
getMinutes duration_to_minutes m duration -> int
getSeconds timestamp_to_seconds m timestamp -> int
getSeconds timestamp_to_seconds_with_tz m timestamp, string -> int
getSeconds duration_to_seconds m duration -> int
getMilliseconds timestamp_to_milliseconds m timestamp -> int
getMilliseconds timestamp_to_milliseconds_with_tz m timestamp, string -> int
getMilliseconds duration_to_milliseconds m duration -> int
charAt string_char_at_int m string, int -> string
indexOf string_index_of_string m string, string -> int
indexOf string_index_of_string_int m string, string, int -> int
lastIndexOf string_last_index_of_string m string, string -> int
lastIndexOf string_last_index_of_string_int m string, string, int -> int
lowerAscii string_lower_ascii m string -> string
upperAscii string_upper_ascii m string -> string
replace string_replace_string_string m string, string, string -> string
replace string_replace_string_string_int m string, string, string, int -> string
split string_split_string m string, string -> list(string)
split string_split_string_int m string, string, int -> list(string)
substring string_substring_int m string, int -> string
substring string_substring_int_int m string, int, int -> string
trim string_trim m string -> string
join list_join m list(string) -> string
join list_join_string m list(string), string -> string
strings.quote strings_quote g string -> string
find string_find_string m string, string -> string
findAll string_find_all_string m string, string -> list(string)
findAll string_find_all_string_int m string, string, int -> list(string)
isSorted list_int_is_sorted_bool m list(int) -> bool
isSorted list_uint_is_sorted_bool m list(uint) -> bool
isSorted list_double_is_sorted_bool m list(double) -> bool
isSorted list_bool_is_sorted_bool m list(bool) -> bool
isSorted list_duration_is_sorted_bool m list(duration) -> bool
isSorted list_timestamp_is_sorted_bool m list(timestamp) -> bool
isSorted list_string_is_sorted_bool m list(string) -> bool
isSorted list_bytes_is_sorted_bool m list(bytes) -> bool
sum list_int_sum_int m list(int) -> int
sum list_uint_sum_uint m list(uint) -> uint
sum list_double_sum_double m list(double) -> double
sum list_duration_sum_duration m list(duration) -> duration
max list_int_max_int m list(int) -> int
max list_uint_max_uint m list(uint) -> uint
max list_double_max_double m list(double) -> double
max list_bool_max_bool m list(bool) -> bool
max list_duration_max_duration m list(duration) -> duration
max list_timestamp_max_timestamp m list(timestamp) -> timestamp
max list_string_max_string m list(string) -> string
max list_bytes_max_bytes m list(bytes) -> bytes
min list_int_min_int m list(int) -> int
min list_uint_min_uint m list(uint) -> uint
min list_double_min_double m list(double) -> double
min list_bool_min_bool m list(bool) -> bool
min list_duration_min_duration m list(duration) -> duration
min list_timestamp_min_timestamp m list(timestamp) -> timestamp
min list_string_min_string m list(string) -> string
min list_bytes_min_bytes m list(bytes) -> bytes
indexOf list_a_index_of_int m list(A), A -> int
lastIndexOf list_a_last_index_of_int m list(A), A -> int
sets.contains list_sets_contains_list g list(A), list(A) -> bool
sets.equivalent list_sets_equivalent_list g list(A), list(A) -> bool
sets.intersects list_sets_intersects_list g list(A), list(A) -> bool
optional.of optional_of g A -> optional(A)
optional.ofNonZeroValue optional_ofNonZeroValue g A -> optional(A)
optional.none optional_none g -> optional(A)
hasValue optional_hasValue m optional(A) -> bool
value optional_value m optional(A) -> A
or optional_or_optional m optional(A), optional(A) -> optional(A)
orValue optional_orValue_value m optional(A), A -> A
cel.@mapInsert @mapInsert_map_key_value g map(K, V), K, V -> map(K, V)
cel.@mapInsert @mapInsert_map_map g map(K, V), map(K, V) -> map(K, V)
quantity string_to_quantity g string -> quantity
isQuantity is_quantity_string g string -> bool
sign quantity_sign g quantity -> int
isGreaterThan quantity_is_greater_than m quantity, quantity -> bool
isLessThan quantity_is_less_than m quantity, quantity -> bool
compareTo quantity_compare_to m quantity, quantity -> int
asApproximateFloat quantity_get_float m quantity -> double
asInteger quantity_get_int m quantity -> int
isInteger quantity_is_integer m quantity -> bool
add quantity_add m quantity, quantity -> quantity
add quantity_add_int m quantity, int -> quantity
sub quantity_sub m quantity, quantity -> quantity
sub quantity_sub_int m quantity, int -> quantity
ip string_to_ip g string -> ip
family ip_family m ip -> int
ip.isCanonical ip_is_canonical g string -> bool
isUnspecified ip_is_unspecified m ip -> bool
isLoopback ip_is_loopback m ip -> bool
isLinkLocalMulticast ip_is_link_local_multicast m ip -> bool
isLinkLocalUnicast ip_is_link_local_unicast m ip -> bool
isGlobalUnicast ip_is_global_unicast m ip -> bool
isIP is_ip g string -> bool
string ip_to_string g ip -> string
cidr string_to_cidr g string -> cidr
containsIP cidr_contains_ip_string m cidr, string -> bool
containsIP cidr_contains_ip_ip m cidr, ip -> bool
containsCIDR cidr_contains_cidr_string m cidr, string -> bool
containsCIDR cidr_contains_cidr m cidr, cidr -> bool
ip cidr_ip m cidr -> ip
masked cidr_masked m cidr -> cidr
prefixLength cidr_prefix_length m cidr -> int
isCIDR is_cidr g string -> bool
string cidr_to_string g cidr -> string
url string_to_url g string -> url
getScheme url_get_scheme m url -> string
getHost url_get_host m url -> string
getHostname url_get_hostname m url -> string
getPort url_get_port m url -> string
getEscapedPath url_get_escaped_path m url -> string
getQuery url_get_query m url -> map(string, list(string))
isURL is_url_string g string -> bool
validate format-validate m format, string -> optional(list(string))
format.named format-named g string -> optional(format)
";

/// Less-than style comparisons: (left, right) type pairs, with cel-go's overload suffixes.
const ORDERED: &[(&str, &str, &str)] = &[
    ("bool", "bool", "bool"),
    ("int", "int", "int64"),
    ("int", "uint", "int64_uint64"),
    ("int", "double", "int64_double"),
    ("uint", "uint", "uint64"),
    ("uint", "int", "uint64_int64"),
    ("uint", "double", "uint64_double"),
    ("double", "double", "double"),
    ("double", "int", "double_int64"),
    ("double", "uint", "double_uint64"),
    ("string", "string", "string"),
    ("bytes", "bytes", "bytes"),
    ("timestamp", "timestamp", "timestamp"),
    ("duration", "duration", "duration"),
];

/// Every function by name.
pub(crate) static FUNCTIONS: LazyLock<HashMap<&'static str, Vec<Overload>>> = LazyLock::new(build);

fn build() -> HashMap<&'static str, Vec<Overload>> {
    let mut out: HashMap<&'static str, Vec<Overload>> = HashMap::new();
    for line in TABLE.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if let Some((name, ov)) = parse_line(line) {
            out.entry(name).or_default().push(ov);
        }
    }
    for (op, prefix) in [
        ("_<_", "less"),
        ("_<=_", "less_equals"),
        ("_>_", "greater"),
        ("_>=_", "greater_equals"),
    ] {
        for (l, r, suffix) in ORDERED {
            let id: &'static str = Box::leak(format!("{prefix}_{suffix}").into_boxed_str());
            if let (Some(a), Some(b)) = (parse_ty(l), parse_ty(r)) {
                out.entry(op).or_default().push(Overload {
                    id,
                    member: false,
                    args: vec![a, b],
                    result: Ty::Bool,
                });
            }
        }
    }
    for (name, _) in crate::k8slib::FORMATS {
        let fname: &'static str = Box::leak(format!("format.{name}").into_boxed_str());
        out.entry(fname).or_default().push(Overload {
            id: fname,
            member: false,
            args: Vec::new(),
            result: Ty::Named("kubernetes.NamedFormat"),
        });
    }
    out
}

fn parse_line(line: &'static str) -> Option<(&'static str, Overload)> {
    let mut it = line.splitn(4, ' ');
    let name = it.next()?;
    let id = it.next()?;
    let member = it.next()? == "m";
    let sig = it.next()?;
    let (args, result) = sig.split_once("->")?;
    let args: Vec<Ty> = split_top(args.trim())
        .into_iter()
        .filter(|a| !a.is_empty())
        .map(parse_ty)
        .collect::<Option<_>>()?;
    Some((
        name,
        Overload {
            id,
            member,
            args,
            result: parse_ty(result.trim())?,
        },
    ))
}

/// Splits `a, list(b), map(c, d)` at top-level commas.
fn split_top(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0u32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(s[start..].trim());
    parts
}

fn parse_ty(s: &str) -> Option<Ty> {
    let s = s.trim();
    if let Some(open) = s.find('(') {
        let inner = s.get(open + 1..s.len().checked_sub(1)?)?;
        let params: Vec<Ty> = split_top(inner)
            .into_iter()
            .map(parse_ty)
            .collect::<Option<_>>()?;
        let mut params = params.into_iter();
        let first = Box::new(params.next()?);
        return match &s[..open] {
            "list" => Some(Ty::List(first)),
            "optional" => Some(Ty::Optional(first)),
            "type" => Some(Ty::Type(Some(first))),
            "map" => Some(Ty::Map(first, Box::new(params.next()?))),
            _ => None,
        };
    }
    Some(match s {
        "int" => Ty::Int,
        "uint" => Ty::Uint,
        "double" => Ty::Double,
        "bool" => Ty::Bool,
        "string" => Ty::String,
        "bytes" => Ty::Bytes,
        "dyn" => Ty::Dyn,
        "null" => Ty::Null,
        "timestamp" => Ty::Timestamp,
        "duration" => Ty::Duration,
        "A" => Ty::Param(0),
        "B" => Ty::Param(1),
        "K" => Ty::Param(2),
        "V" => Ty::Param(3),
        "quantity" => Ty::Named("kubernetes.Quantity"),
        "ip" => Ty::Named("net.IP"),
        "cidr" => Ty::Named("net.CIDR"),
        "url" => Ty::Named("kubernetes.URL"),
        "format" => Ty::Named("kubernetes.NamedFormat"),
        _ => return None,
    })
}

/// Identifiers that name types (`type(x) == string`, `net.IP`): the name, which is also the
/// runtime value of the type (what `type()` returns), and the type it names.
static TYPE_IDENTS: LazyLock<Vec<(&str, Ty)>> = LazyLock::new(|| {
    vec![
        ("int", Ty::Int),
        ("uint", Ty::Uint),
        ("double", Ty::Double),
        ("bool", Ty::Bool),
        ("string", Ty::String),
        ("bytes", Ty::Bytes),
        ("null_type", Ty::Null),
        ("list", Ty::List(Box::new(Ty::Dyn))),
        ("map", Ty::Map(Box::new(Ty::Dyn), Box::new(Ty::Dyn))),
        ("type", Ty::Type(None)),
        ("google.protobuf.Timestamp", Ty::Timestamp),
        ("google.protobuf.Duration", Ty::Duration),
        ("optional_type", Ty::Optional(Box::new(Ty::Dyn))),
        ("net.IP", Ty::Named("net.IP")),
        ("net.CIDR", Ty::Named("net.CIDR")),
        ("kubernetes.Quantity", Ty::Named("kubernetes.Quantity")),
        ("kubernetes.URL", Ty::Named("kubernetes.URL")),
        (
            "kubernetes.NamedFormat",
            Ty::Named("kubernetes.NamedFormat"),
        ),
    ]
});

/// The type an identifier or qualified name names, with the name as a static string.
pub(crate) fn type_ident(name: &str) -> Option<(&'static str, Ty)> {
    TYPE_IDENTS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(n, ty)| (*n, ty.clone()))
}

#[cfg(test)]
mod tests {
    use super::{FUNCTIONS, TABLE};

    #[test]
    fn every_line_parses() {
        let lines = TABLE.lines().filter(|l| !l.trim().is_empty()).count();
        let parsed: usize = FUNCTIONS.values().map(Vec::len).sum();
        assert_eq!(
            parsed,
            lines + 4 * super::ORDERED.len() + crate::k8slib::FORMATS.len()
        );
    }
}
