//! `/livez`, `/readyz`, `/healthz` (`HEALTH-01`..`HEALTH-04`): `?verbose`, repeated
//! `?exclude=`, and per-check paths.

use wasmgate_apimachinery::options::Query;

/// Which endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `/livez`.
    Livez,
    /// `/readyz`.
    Readyz,
    /// `/healthz`.
    Healthz,
}

impl Endpoint {
    /// From the first path segment.
    pub fn from_segment(s: &str) -> Option<Endpoint> {
        match s {
            "livez" => Some(Endpoint::Livez),
            "readyz" => Some(Endpoint::Readyz),
            "healthz" => Some(Endpoint::Healthz),
            _ => None,
        }
    }

    /// The endpoint's name (`livez`).
    pub fn name(self) -> &'static str {
        match self {
            Endpoint::Livez => "livez",
            Endpoint::Readyz => "readyz",
            Endpoint::Healthz => "healthz",
        }
    }
}

/// One check's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// Name, as shown between `[+]` and `ok`.
    pub name: &'static str,
    /// `None` when healthy, else why not (logged where the checks run, not shown).
    pub failure: Option<String>,
}

/// The HTTP status and text body of a health request.
pub fn render(endpoint: Endpoint, sub: Option<&str>, q: &Query, checks: &[Check]) -> (u16, String) {
    if let Some(name) = sub {
        return match checks.iter().find(|c| c.name == name) {
            Some(Check { failure: None, .. }) => (200, "ok".into()),
            Some(Check {
                failure: Some(_), ..
            }) => (500, format!("[-]{name} failed: reason withheld\n")),
            None => (404, "404 page not found\n".into()),
        };
    }
    let excluded: Vec<&str> = q
        .get_all("exclude")
        .flat_map(|v| v.split(','))
        .filter(|s| !s.is_empty())
        .collect();
    let verbose = q.has("verbose");
    let mut out = String::new();
    let mut failed = false;
    for c in checks {
        if excluded.contains(&c.name) {
            out.push_str(&format!("[+]{} excluded: ok\n", c.name));
            continue;
        }
        match &c.failure {
            None => out.push_str(&format!("[+]{} ok\n", c.name)),
            Some(_) => {
                failed = true;
                out.push_str(&format!("[-]{} failed: reason withheld\n", c.name));
            }
        }
    }
    for e in &excluded {
        if !checks.iter().any(|c| c.name == *e) {
            out.push_str(&format!(
                "warn: some health checks cannot be excluded: no matches for \"{e}\"\n"
            ));
        }
    }
    let name = endpoint.name();
    if failed {
        out.push_str(&format!("{name} check failed\n"));
        (500, out)
    } else if verbose {
        out.push_str(&format!("{name} check passed\n"));
        (200, out)
    } else {
        (200, "ok".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checks(fail_shutdown: bool) -> Vec<Check> {
        vec![
            Check {
                name: "ping",
                failure: None,
            },
            Check {
                name: "storage",
                failure: None,
            },
            Check {
                name: "shutdown",
                failure: fail_shutdown.then(|| "shutting down".into()),
            },
        ]
    }

    #[test]
    fn health_02_verbose_and_03_exclude() {
        let (code, body) = render(
            Endpoint::Readyz,
            None,
            &Query::parse(Some("verbose")),
            &checks(false),
        );
        assert_eq!(code, 200);
        assert_eq!(
            body,
            "[+]ping ok\n[+]storage ok\n[+]shutdown ok\nreadyz check passed\n"
        );
        let (code, body) = render(
            Endpoint::Readyz,
            None,
            &Query::parse(Some("verbose&exclude=storage")),
            &checks(true),
        );
        assert_eq!(code, 500);
        assert!(body.contains("[+]storage excluded: ok\n"));
        assert!(body.contains("[-]shutdown failed: reason withheld\n"));
        let (code, body) = render(Endpoint::Livez, None, &Query::default(), &checks(false));
        assert_eq!((code, body.as_str()), (200, "ok"));
    }

    #[test]
    fn health_04_per_check_paths() {
        assert_eq!(
            render(
                Endpoint::Livez,
                Some("ping"),
                &Query::default(),
                &checks(false)
            )
            .0,
            200
        );
        assert_eq!(
            render(
                Endpoint::Readyz,
                Some("shutdown"),
                &Query::default(),
                &checks(true)
            )
            .0,
            500
        );
        assert_eq!(
            render(
                Endpoint::Readyz,
                Some("nope"),
                &Query::default(),
                &checks(true)
            )
            .0,
            404
        );
    }
}
