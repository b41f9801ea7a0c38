//! Per-user shares of the in-flight budget (issue 12, in the spirit of API Priority and
//! Fairness without its objects): every user may hold at most `max_in_flight_per_user`
//! of the `max_in_flight` requests served at once, so one client — one HTTP/2 connection
//! with a thousand streams whose bodies never finish, say — gets 429s while everyone
//! else is still served. Watches are exempt, as from the global limit.

use std::collections::HashMap;
use std::sync::Mutex;

use wasmgate_apimachinery::status::Status;

use crate::error::ApiError;

/// Requests in flight, per user name.
#[derive(Debug, Default)]
pub(crate) struct PerUser {
    counts: Mutex<HashMap<String, usize>>,
}

/// One request's place in its user's share; given back on drop.
#[derive(Debug)]
pub(crate) struct Held<'a> {
    shares: &'a PerUser,
    user: String,
}

impl PerUser {
    /// A place for one more request of `user`, unless it holds `max` already (429, with
    /// kube's wording and `Retry-After`).
    pub(crate) fn acquire(&self, user: &str, max: usize) -> Result<Held<'_>, ApiError> {
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let n = match counts.get_mut(user) {
            Some(n) => n,
            None => counts.entry(user.to_owned()).or_insert(0),
        };
        if *n >= max.max(1) {
            return Err(Status::failure(
                429,
                "TooManyRequests",
                "Too many requests, please try again later.",
            )
            .with_retry_after(1)
            .into());
        }
        *n += 1;
        Ok(Held {
            shares: self,
            user: user.to_owned(),
        })
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        let mut counts = self.shares.counts.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = counts.get_mut(&self.user) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                counts.remove(&self.user);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    /// A user past its share gets 429; others are not affected; places come back.
    #[test]
    fn shares_are_per_user() {
        let p = PerUser::default();
        let a1 = p.acquire("a", 2).unwrap();
        let _a2 = p.acquire("a", 2).unwrap();
        let err = p.acquire("a", 2).unwrap_err();
        assert_eq!(err.status.code, 429);
        let _b = p.acquire("b", 2).unwrap();
        drop(a1);
        let _a3 = p.acquire("a", 2).unwrap();
    }
}
