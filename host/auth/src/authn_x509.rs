//! X.509 client-certificate authentication.
//!
//! Mirrors kube-apiserver's x509 authenticator (`--client-ca-file`): once the TLS layer has
//! verified a client certificate against the client CA, the user is the subject's common name
//! (`CN`) and the groups are the subject's organization (`O`) values, in certificate order.
//!
//! Chain, validity period and the `clientAuth` key usage are checked by the TLS layer (the rustls
//! client-certificate verifier); this module only reads the identity out of an already verified
//! certificate.

use x509_parser::der_parser::asn1_rs::Tag;
use x509_parser::prelude::{FromDer, X509Certificate};
use x509_parser::x509::AttributeTypeAndValue;

/// The user a verified client certificate names: CN = user name, each O = a group (as
/// kube-apiserver's x509 authenticator). None if the DER cannot be parsed or has no CN.
///
/// As in Go's `crypto/x509` (which kube-apiserver uses), when the subject has several `CN`
/// attributes the last one wins, and every `O` attribute becomes a group in the order they appear.
/// An empty `CN` counts as no `CN` (kube-apiserver refuses such certificates as well).
pub fn user_from_client_cert(der: &[u8]) -> Option<(String, Vec<String>)> {
    let (rest, cert) = X509Certificate::from_der(der).ok()?;
    if !rest.is_empty() {
        return None;
    }
    let subject = cert.subject();
    let user = subject
        .iter_common_name()
        .filter_map(attribute_string)
        .last()?;
    if user.is_empty() {
        return None;
    }
    let groups = subject
        .iter_organization()
        .filter_map(attribute_string)
        .collect();
    Some((user, groups))
}

/// Decodes a directory-string attribute value the way Go's `encoding/asn1` does for a
/// `pkix.Name`: UTF8String, PrintableString, IA5String and NumericString as text, T61String as
/// Latin-1, BMPString as UTF-16BE. Anything else (or malformed text) is skipped, as Go skips
/// non-string values.
fn attribute_string(attr: &AttributeTypeAndValue<'_>) -> Option<String> {
    if let Ok(s) = attr.as_str() {
        return Some(s.to_owned());
    }
    let value = attr.attr_value();
    let data: &[u8] = value.data;
    match value.tag() {
        Tag::T61String => Some(data.iter().map(|&b| char::from(b)).collect()),
        Tag::BmpString => {
            if !data.len().is_multiple_of(2) {
                return None;
            }
            let units = data
                .chunks_exact(2)
                .map(|pair| u16::from_be_bytes([pair[0], pair[1]]));
            char::decode_utf16(units)
                .collect::<Result<String, _>>()
                .ok()
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, DistinguishedName, DnType, DnValue, KeyPair};

    fn self_signed(dn: DistinguishedName) -> Vec<u8> {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::default();
        params.distinguished_name = dn;
        params.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn cn_and_single_o() {
        let mut dn = DistinguishedName::new();
        dn.push(DnType::OrganizationName, "system:masters");
        dn.push(DnType::CommonName, "wasmgate-admin");
        assert_eq!(
            user_from_client_cert(&self_signed(dn)),
            Some((
                "wasmgate-admin".to_owned(),
                vec!["system:masters".to_owned()]
            ))
        );
    }

    #[test]
    fn no_groups_and_other_string_types() {
        let mut dn = DistinguishedName::new();
        dn.push(
            DnType::CommonName,
            DnValue::PrintableString("jane".try_into().unwrap()),
        );
        dn.push(DnType::OrganizationalUnitName, "not-a-group");
        assert_eq!(
            user_from_client_cert(&self_signed(dn)),
            Some(("jane".to_owned(), vec![]))
        );

        let mut dn = DistinguishedName::new();
        dn.push(
            DnType::CommonName,
            DnValue::BmpString("bmp-user".try_into().unwrap()),
        );
        dn.push(
            DnType::OrganizationName,
            DnValue::TeletexString("t61-group".try_into().unwrap()),
        );
        assert_eq!(
            user_from_client_cert(&self_signed(dn)),
            Some(("bmp-user".to_owned(), vec!["t61-group".to_owned()]))
        );
    }

    #[test]
    fn several_cns_and_os() {
        // rcgen keeps one value per attribute type, but a custom type with the same OID adds a
        // second attribute: O=first-group, O=second-group, CN=first, CN=last.
        let mut dn = DistinguishedName::new();
        dn.push(DnType::OrganizationName, "first-group");
        dn.push(DnType::CustomDnType(vec![2, 5, 4, 10]), "second-group");
        dn.push(DnType::CommonName, "first");
        dn.push(DnType::CustomDnType(vec![2, 5, 4, 3]), "last");
        assert_eq!(
            user_from_client_cert(&self_signed(dn)),
            Some((
                "last".to_owned(),
                vec!["first-group".to_owned(), "second-group".to_owned()]
            ))
        );
    }

    #[test]
    fn missing_or_empty_cn_is_none() {
        let mut dn = DistinguishedName::new();
        dn.push(DnType::OrganizationName, "system:masters");
        assert_eq!(user_from_client_cert(&self_signed(dn)), None);

        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, "");
        assert_eq!(user_from_client_cert(&self_signed(dn)), None);
    }

    #[test]
    fn garbage_is_none() {
        assert_eq!(user_from_client_cert(b""), None);
        assert_eq!(user_from_client_cert(b"not a certificate"), None);
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, "x");
        let mut der = self_signed(dn);
        der.push(0);
        assert_eq!(user_from_client_cert(&der), None, "trailing data");
        der.truncate(der.len() - 10);
        assert_eq!(user_from_client_cert(&der), None, "truncated");
    }
}
