//! Just enough DER to build names and to swap the names of an rcgen-made certificate.

use anyhow::{bail, ensure};

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const BIT_STRING: u8 = 0x03;
const INTEGER: u8 = 0x02;
const UTF8_STRING: u8 = 0x0c;
/// `[0] EXPLICIT Version` in a TBSCertificate.
const VERSION: u8 = 0xa0;
/// `id-at-commonName` (2.5.4.3) as a DER OBJECT IDENTIFIER.
const OID_CN: &[u8] = &[0x06, 0x03, 0x55, 0x04, 0x03];
/// `id-at-organizationName` (2.5.4.10) as a DER OBJECT IDENTIFIER.
const OID_O: &[u8] = &[0x06, 0x03, 0x55, 0x04, 0x0a];

/// One DER element.
struct Element<'a> {
    tag: u8,
    /// Tag, length and content.
    whole: &'a [u8],
    content: &'a [u8],
}

/// Splits the first element off `input` (single-byte tags, definite lengths up to 4 bytes).
fn split(input: &[u8]) -> anyhow::Result<(Element<'_>, &[u8])> {
    let Some((&tag, rest)) = input.split_first() else {
        bail!("DER: unexpected end of input")
    };
    ensure!(tag & 0x1f != 0x1f, "DER: multi-byte tags are not supported");
    let Some((&first, rest)) = rest.split_first() else {
        bail!("DER: missing length")
    };
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        ensure!(
            (1..=4).contains(&n) && rest.len() >= n,
            "DER: bad length encoding"
        );
        let (len_bytes, rest) = rest.split_at(n);
        let len = len_bytes
            .iter()
            .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
        (len, rest)
    };
    ensure!(rest.len() >= len, "DER: element longer than its input");
    let header_len = input.len() - rest.len();
    let (whole, _) = input.split_at(header_len + len);
    let (content, rest) = rest.split_at(len);
    Ok((
        Element {
            tag,
            whole,
            content,
        },
        rest,
    ))
}

/// All elements of a constructed value's content.
fn elements(mut input: &[u8]) -> anyhow::Result<Vec<Element<'_>>> {
    let mut out = Vec::new();
    while !input.is_empty() {
        let (element, rest) = split(input)?;
        out.push(element);
        input = rest;
    }
    Ok(out)
}

/// Encodes one element.
fn encode(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(content.len() + 6);
    out.push(tag);
    let len = content.len();
    match u8::try_from(len) {
        Ok(short) if short < 0x80 => out.push(short),
        _ => {
            let bytes = len.to_be_bytes();
            let skip = bytes.iter().take_while(|&&b| b == 0).count();
            let significant = bytes.get(skip..).unwrap_or_default();
            // At most size_of::<usize>() bytes, so this cannot truncate.
            out.push(0x80 | significant.len() as u8);
            out.extend_from_slice(significant);
        }
    }
    out.extend_from_slice(content);
    out
}

/// One single-valued RDN `SET { SEQUENCE { oid, UTF8String value } }`.
fn rdn(oid: &[u8], value: &str) -> Vec<u8> {
    let mut atv = oid.to_vec();
    atv.extend(encode(UTF8_STRING, value.as_bytes()));
    encode(SET, &encode(SEQUENCE, &atv))
}

/// The DER Name `O=<org>...,CN=<cn>` (Go's attribute order: organizations before the common
/// name), every value a UTF8String, one attribute per RDN.
pub(super) fn name(cn: &str, orgs: &[&str]) -> Vec<u8> {
    let mut rdns = Vec::new();
    for org in orgs {
        rdns.extend(rdn(OID_O, org));
    }
    rdns.extend(rdn(OID_CN, cn));
    encode(SEQUENCE, &rdns)
}

/// Rebuilds `cert` with `issuer` and `subject` (DER Names) in place of its own, re-signed with
/// `sign` (which must produce a signature for the algorithm already named in `cert`).
pub(super) fn replace_names(
    cert: &[u8],
    issuer: &[u8],
    subject: &[u8],
    sign: impl FnOnce(&[u8]) -> anyhow::Result<Vec<u8>>,
) -> anyhow::Result<Vec<u8>> {
    let (outer, rest) = split(cert)?;
    ensure!(
        outer.tag == SEQUENCE && rest.is_empty(),
        "certificate is not one SEQUENCE"
    );
    let parts = elements(outer.content)?;
    let [tbs, signature_algorithm, signature] = parts.as_slice() else {
        bail!("certificate does not have 3 parts");
    };
    ensure!(
        tbs.tag == SEQUENCE && signature_algorithm.tag == SEQUENCE && signature.tag == BIT_STRING,
        "unexpected certificate structure"
    );
    let fields = elements(tbs.content)?;
    let [
        version,
        serial,
        tbs_algorithm,
        old_issuer,
        validity,
        old_subject,
        spki,
        tail @ ..,
    ] = fields.as_slice()
    else {
        bail!("TBSCertificate has too few fields");
    };
    ensure!(
        version.tag == VERSION
            && serial.tag == INTEGER
            && [tbs_algorithm, old_issuer, validity, old_subject, spki]
                .iter()
                .all(|f| f.tag == SEQUENCE),
        "unexpected TBSCertificate structure"
    );
    for name in [issuer, subject] {
        let (element, rest) = split(name)?;
        ensure!(
            element.tag == SEQUENCE && rest.is_empty(),
            "a Name must be one SEQUENCE"
        );
    }

    let mut tbs_content = Vec::with_capacity(tbs.content.len() + issuer.len() + subject.len());
    tbs_content.extend_from_slice(version.whole);
    tbs_content.extend_from_slice(serial.whole);
    tbs_content.extend_from_slice(tbs_algorithm.whole);
    tbs_content.extend_from_slice(issuer);
    tbs_content.extend_from_slice(validity.whole);
    tbs_content.extend_from_slice(subject);
    tbs_content.extend_from_slice(spki.whole);
    for field in tail {
        tbs_content.extend_from_slice(field.whole);
    }
    let new_tbs = encode(SEQUENCE, &tbs_content);

    let mut bits = vec![0u8]; // no unused bits
    bits.extend(sign(&new_tbs)?);
    let mut body = new_tbs;
    body.extend_from_slice(signature_algorithm.whole);
    body.extend(encode(BIT_STRING, &bits));
    Ok(encode(SEQUENCE, &body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_round_trip() {
        for len in [0usize, 1, 127, 128, 255, 256, 65_535, 65_536, 1 << 20] {
            let content = vec![7u8; len];
            let encoded = encode(SEQUENCE, &content);
            let (element, rest) = split(&encoded).unwrap();
            assert!(rest.is_empty());
            assert_eq!(element.tag, SEQUENCE);
            assert_eq!(element.content.len(), len);
            assert_eq!(element.whole.len(), encoded.len());
        }
    }

    #[test]
    fn rejects_truncated_and_bad_lengths() {
        assert!(split(&[]).is_err());
        assert!(split(&[0x30]).is_err());
        assert!(split(&[0x30, 0x05, 0x00]).is_err());
        assert!(split(&[0x30, 0x80]).is_err(), "indefinite length");
        assert!(split(&[0x30, 0x85, 1, 1, 1, 1, 1]).is_err());
        assert!(split(&[0x1f, 0x01, 0x00]).is_err(), "multi-byte tag");
    }
}
