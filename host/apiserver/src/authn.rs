//! Bearer tokens, as kube's token authenticators take them: a line of the token file or a
//! ServiceAccount token this cluster signed, whose account still exists. The stack
//! authenticates a request's own token with it; a `TokenReview` asks it about any token.

use crate::User;
use crate::error::{ApiError, ApiResult};
use crate::inner::Inner;

/// What the gateway's token authenticators make of a bearer token (kube's bearer-token
/// authenticator over its token union): the request's own token, or a `TokenReview`'s.
pub(crate) enum TokenAuth {
    /// Who the token is.
    Authenticated(TokenUser),
    /// Not accepted, and why in kube's words (`invalid bearer token` when no
    /// authenticator recognised it).
    Refused(String),
}

/// The user a token authenticates, as a `TokenReview` reports it.
pub(crate) struct TokenUser {
    pub(crate) user: User,
    /// The token file's uid, or the service account's.
    pub(crate) uid: String,
    /// kube's extra values (a service account token's `credential-id`).
    pub(crate) extra: Vec<(String, Vec<String>)>,
    /// The audiences the token was accepted for, of those asked.
    pub(crate) audiences: Vec<String>,
}

/// Authenticates `token` for `audiences` (this server's, [`crate::sa_token::ISSUER`],
/// for a request's own token): a line of the token file (audience-agnostic: accepted for
/// this server's audience only, as kube wraps such authenticators), else a service
/// account token the gateway signed for one of `audiences`, current, whose account still
/// exists with the uid it names.
pub(crate) async fn authenticate_token(
    inner: &Inner,
    token: &str,
    audiences: &[&str],
) -> ApiResult<TokenAuth> {
    const INVALID: &str = "invalid bearer token";
    let ours = crate::sa_token::ISSUER;
    if let Some((user, uid)) = inner.options.tokens.lookup(token) {
        if !audiences.contains(&ours) {
            return Ok(TokenAuth::Refused(INVALID.into()));
        }
        return Ok(TokenAuth::Authenticated(TokenUser {
            user: user.clone(),
            uid: uid.to_owned(),
            extra: Vec::new(),
            audiences: vec![ours.to_owned()],
        }));
    }
    let claims = match crate::sa_token::check(&inner.sa_signer, token, audiences) {
        Ok(c) => c,
        Err(why) => return Ok(TokenAuth::Refused(why.unwrap_or_else(|| INVALID.into()))),
    };
    let key = format!("core/serviceaccounts/{}/{}", claims.namespace, claims.name);
    let account = match inner
        .store
        .get(&key, wasmgate_storage::ReadAt::Latest)
        .await
    {
        Ok((_, Some(v))) => crate::object::from_stored(&v.value).ok(),
        Ok((_, None)) => None,
        Err(e) => {
            return Err(ApiError::internal(format!(
                "reading the service account of a token: {e}"
            )));
        }
    };
    let Some(account) = account else {
        return Ok(TokenAuth::Refused(format!(
            "serviceaccounts \"{}\" not found",
            claims.name
        )));
    };
    let uid = crate::object::meta_str(&account, "uid").unwrap_or("");
    if uid != claims.uid {
        return Ok(TokenAuth::Refused(format!(
            "service account UID ({uid}) does not match claim ({})",
            claims.uid
        )));
    }
    let extra = claims
        .id
        .iter()
        .map(|jti| {
            (
                "authentication.kubernetes.io/credential-id".to_owned(),
                vec![format!("JTI={jti}")],
            )
        })
        .collect();
    Ok(TokenAuth::Authenticated(TokenUser {
        user: crate::sa_token::user_of(&claims.namespace, &claims.name),
        uid: claims.uid,
        extra,
        audiences: claims.audiences,
    }))
}
