//! Which instance a call runs in ([`Isolation`]), and a request's hold on one ([`Session`]).
//!
//! Under the default, [`Isolation::PerRequest`], an instance serves one request: its
//! `mutate` and then its `validate` (a [`Session`] keeps it between the two), never
//! another request, so nothing one request left in a plugin's memory (a global, the heap)
//! is reachable from another's call. Instantiating is most of what a call costs, so a
//! plugin bound as both hooks pays for one instance per request, not two.
//!
//! Under [`Isolation::Reused`], chosen per plugin, an instance that answered goes back to
//! the plugin's idle instances and serves later requests (of any user) as it is. That is
//! the cost of a call with no instantiation at all; what it gives up is the isolation
//! between requests: whatever a plugin keeps in its globals or leaves on its heap is seen
//! by the next request it serves, and a plugin that leaks memory leaks across requests.
//! An instance is never reused after a call that failed (trap, timeout, out of memory, an
//! answer over the caps), after [`MAX_CALLS_PER_INSTANCE`] calls, or once its memory
//! grew past half of the plugin's limit.

use std::sync::{Arc, Mutex};

use sync_wrapper::SyncWrapper;
use tokio::time::Instant;
use wasmtime::component::Instance;
use wasmtime::{Store, UpdateDeadline};

use crate::host::State;
use crate::plugin::{LoadedExports, Plugin};
use crate::share::Permits;

/// How a plugin's instances are shared between requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Isolation {
    /// A fresh instance per request (for its hooks in turn): no data of one request is
    /// reachable from another request's call.
    #[default]
    PerRequest,
    /// Instances are kept after a successful call and reused by later requests: no
    /// instantiation per call, no isolation between requests (module docs).
    Reused,
}

impl Isolation {
    /// The `WasmPlugin` spelling (`spec.isolation`).
    pub fn as_str(self) -> &'static str {
        match self {
            Isolation::PerRequest => "PerRequest",
            Isolation::Reused => "Reused",
        }
    }

    /// From the `WasmPlugin` spelling.
    pub fn parse(s: &str) -> Option<Isolation> {
        match s {
            "PerRequest" => Some(Isolation::PerRequest),
            "Reused" => Some(Isolation::Reused),
            _ => None,
        }
    }
}

/// Calls one reused instance serves at most before it is dropped (and a fresh one made):
/// bounds what a slow leak or a growing cache in a plugin can accumulate.
pub const MAX_CALLS_PER_INSTANCE: u32 = 10_000;

/// Idle instances a [`Isolation::Reused`] plugin keeps at most (each holds one of its
/// share and a slot of the pool while idle).
pub(crate) const MAX_IDLE: usize = 8;

/// An instance and the pool slots it holds, between calls or during one. The store is
/// dropped before the permits (field order), which gives the pooled instance back first.
pub(crate) struct Lease {
    pub(crate) store: Store<State>,
    pub(crate) instance: Instance,
    pub(crate) exports: LoadedExports,
    _permits: Permits,
    calls: u32,
}

impl Lease {
    pub(crate) fn new(store: Store<State>, instance: Instance, permits: Permits) -> Lease {
        Lease {
            store,
            instance,
            exports: LoadedExports::default(),
            _permits: permits,
            calls: 0,
        }
    }

    /// Readies the instance for one more call, of request `uid`, until `deadline`.
    pub(crate) fn begin(&mut self, uid: &Arc<str>, deadline: Instant) {
        self.calls += 1;
        if self.calls > 1 {
            self.store.data_mut().begin_call(uid.clone());
            arm(&mut self.store, deadline);
        }
    }

    /// Whether this instance may serve another request.
    fn reusable(&self, memory_limit: u64) -> bool {
        self.calls < MAX_CALLS_PER_INSTANCE
            && self.store.data().limiter.grown() <= memory_limit / 2
            && !self.store.data().limiter.exceeded
    }
}

/// Sets the store's epoch deadline: every tick the plugin hands its worker back to the
/// async runtime, so a slow plugin delays only its own request; past `deadline` it is
/// interrupted.
pub(crate) fn arm(store: &mut Store<State>, deadline: Instant) {
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(move |_| {
        Ok(if Instant::now() >= deadline {
            UpdateDeadline::Interrupt
        } else {
            UpdateDeadline::Yield(1)
        })
    });
}

/// The idle instances of a [`Isolation::Reused`] plugin version.
#[derive(Default)]
pub(crate) struct Idle(Mutex<Vec<Lease>>);

impl Idle {
    pub(crate) fn take(&self) -> Option<Lease> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).pop()
    }

    fn put(&self, lease: Lease) {
        let mut idle = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < MAX_IDLE {
            idle.push(lease);
        }
    }

    /// How many instances are idle.
    pub(crate) fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// One request's calls of one plugin: they share an instance (made at the first call,
/// kept while the calls succeed), which goes with the session when it ends, or back to
/// the plugin's idle instances under [`Isolation::Reused`].
pub struct Session {
    plugin: Arc<Plugin>,
    /// Reached through `&mut self` only, so a session is `Sync` though a store is not.
    lease: SyncWrapper<Option<Lease>>,
}

impl Session {
    pub(crate) fn new(plugin: Arc<Plugin>) -> Session {
        Session {
            plugin,
            lease: SyncWrapper::new(None),
        }
    }

    /// `admission.mutate` in the request's instance (made now if the session has none);
    /// the instance stays for the request's next hook unless the call failed.
    pub async fn mutate(
        &mut self,
        req: &crate::wit::AdmissionRequest,
    ) -> Result<crate::wit::AdmissionResponse, crate::CallError> {
        self.fill();
        self.plugin.mutate_in(self.lease.get_mut(), req).await
    }

    /// `admission.validate` in the request's instance, the request's last call of the
    /// plugin: the instance is let go of after it.
    pub async fn validate(
        &mut self,
        req: &crate::wit::AdmissionRequest,
    ) -> Result<crate::wit::AdmissionResponse, crate::CallError> {
        self.fill();
        let r = self.plugin.validate_in(self.lease.get_mut(), req).await;
        self.release();
        r
    }

    /// A session with no instance yet takes an idle one ([`Isolation::Reused`]).
    fn fill(&mut self) {
        let lease = self.lease.get_mut();
        if lease.is_none() {
            *lease = self.plugin.idle_slot();
        }
    }

    /// Lets go of the instance now (the request will not call the plugin again).
    pub fn release(&mut self) {
        if let Some(lease) = self.lease.get_mut().take() {
            self.plugin.give_back(lease);
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.release();
    }
}

impl Plugin {
    /// Where an instance goes when a request is done with it.
    pub(crate) fn give_back(&self, lease: Lease) {
        if self.limits().isolation == Isolation::Reused
            && lease.reusable(self.limits().memory_bytes)
        {
            self.idle().put(lease);
        }
    }
}
