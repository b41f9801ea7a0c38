//! One loaded plugin version: its compiled component, pre-linked, and the calls of its
//! hooks, each bounded in time and memory, in an instance of the request (or a reused
//! one: `lease`).

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use wasmtime::component::{Component, Instance, InstancePre};
use wasmtime::{Store, Trap};

use crate::bindings::exports::wasmgate::plugin::{admission, conversion, metadata, printer};
use crate::host::State;
use crate::lease::{Idle, Isolation, Lease, Session, arm};
use crate::share::{InstanceStats, Share};
use crate::wit::{
    AdmissionRequest, AdmissionResponse, ColumnDefinition, ConversionRequest, Hook, PluginInfo,
    Status,
};
use crate::{CallError, LoadError, MAX_MEMORY_BYTES, Runtime, caps};

/// Time and memory bounds of every call of one plugin, and which instances its calls
/// run in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub timeout: Duration,
    pub memory_bytes: u64,
    pub isolation: Isolation,
}

impl Default for Limits {
    /// 100 ms, 64 MiB, an instance per request.
    fn default() -> Limits {
        Limits {
            timeout: Duration::from_millis(100),
            memory_bytes: 64 << 20,
            isolation: Isolation::PerRequest,
        }
    }
}

/// Longest per-call timeout.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(30);
/// Smallest memory limit (a Rust plugin's stack and heap need about 1 MiB).
pub const MIN_MEMORY_BYTES: u64 = 2 << 20;

impl Limits {
    pub fn check(&self) -> Result<(), LoadError> {
        if self.timeout.is_zero() || self.timeout > MAX_TIMEOUT {
            return Err(LoadError::Limits(format!(
                "timeout must be more than 0 and at most {}s",
                MAX_TIMEOUT.as_secs()
            )));
        }
        if !(MIN_MEMORY_BYTES..=MAX_MEMORY_BYTES).contains(&self.memory_bytes) {
            return Err(LoadError::Limits(format!(
                "memory limit must be between {MIN_MEMORY_BYTES} and {MAX_MEMORY_BYTES} bytes"
            )));
        }
        Ok(())
    }
}

/// Which hooks a plugin implements (from its `metadata.info`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Hooks {
    pub mutate: bool,
    pub validate: bool,
    pub convert: bool,
    pub print: bool,
}

impl Hooks {
    fn from_info(info: &PluginInfo) -> Hooks {
        let mut h = Hooks::default();
        for hook in &info.hooks {
            match hook {
                Hook::Mutate => h.mutate = true,
                Hook::Validate => h.validate = true,
                Hook::Convert => h.convert = true,
                Hook::Print => h.print = true,
            }
        }
        h
    }

    /// The hooks by their WIT names, in WIT order.
    pub fn names(&self) -> Vec<&'static str> {
        [
            (self.mutate, "mutate"),
            (self.validate, "validate"),
            (self.convert, "convert"),
            (self.print, "print"),
        ]
        .into_iter()
        .filter_map(|(on, n)| on.then_some(n))
        .collect()
    }
}

/// A plugin version ready to be called. Cheap to share; calls run concurrently, each in
/// its own instance.
pub struct Plugin {
    name: Arc<str>,
    digest: String,
    info: PluginInfo,
    hooks: Hooks,
    limits: Limits,
    config: Arc<str>,
    pre: InstancePre<State>,
    exports: Exports,
    /// The plugin's instances (shared by its versions), and the runtime's.
    share: Arc<Share>,
    global: Arc<tokio::sync::Semaphore>,
    /// How many of the runtime's instance slots an instance takes ([`weight`]).
    weight: u32,
    engine: wasmtime::Engine,
    /// Instances kept between requests ([`Isolation::Reused`] only).
    idle: Idle,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("name", &self.name)
            .field("digest", &self.digest)
            .field("hooks", &self.hooks)
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// Compiles (or finds compiled) `bytes`, links it against the contract and runs its
    /// self-test: an instance is created and `metadata.info` called under `limits`.
    /// `name` names the plugin in logs and errors; `config` is what its `host.config`
    /// import returns.
    pub async fn load(
        &self,
        name: &str,
        bytes: &[u8],
        limits: Limits,
        config: &str,
    ) -> Result<Plugin, LoadError> {
        limits.check()?;
        let digest = crate::digest(bytes);
        let component = self.compiled(&digest, bytes).await?;
        let instance_pre = self
            .linker
            .instantiate_pre(&component)
            .map_err(|e| LoadError::WrongContract(format!("{e:#}")))?;
        let exports =
            Exports::new(&instance_pre).map_err(|e| LoadError::WrongContract(format!("{e:#}")))?;
        let weight = weight(&component)?;
        let mut plugin = Plugin {
            name: name.into(),
            digest,
            info: PluginInfo {
                name: String::new(),
                version: String::new(),
                hooks: Vec::new(),
            },
            hooks: Hooks::default(),
            limits,
            config: config.into(),
            pre: instance_pre,
            exports,
            share: self.shares.get(name, crate::INSTANCES_PER_PLUGIN),
            global: self.instances.clone(),
            weight,
            engine: self.engine.clone(),
            idle: Idle::default(),
        };
        let info = plugin.info().await.map_err(LoadError::SelfTest)?;
        plugin.hooks = Hooks::from_info(&info);
        plugin.info = info;
        Ok(plugin)
    }

    /// Compiling takes 0.1-1 s of CPU: it runs on a blocking thread, never on the async
    /// workers.
    async fn compiled(&self, digest: &str, bytes: &[u8]) -> Result<Component, LoadError> {
        let engine = self.engine.clone();
        let digest2 = digest.to_owned();
        let bytes = bytes.to_vec();
        let cache = self.cache.clone();
        tokio::task::spawn_blocking(move || cache.component(&engine, &digest2, &bytes))
            .await
            .map_err(|e| LoadError::NotAComponent(format!("compiler stopped: {e}")))?
    }
}

/// How many of the runtime's instance slots one instance of `component` takes: the pool
/// has one linear memory and four tables per slot (a Rust plugin has one memory and two
/// tables), so a component with more takes more slots, and the pool never runs out of
/// memories or tables before the global bound says so. At most [`MAX_WEIGHT`].
fn weight(component: &Component) -> Result<u32, LoadError> {
    let Some(r) = component.resources_required() else {
        // Only a component that imports core modules says nothing; ours cannot.
        return Ok(crate::MAX_WEIGHT);
    };
    let weight = (r.num_memories)
        .max(r.num_tables.div_ceil(crate::TABLES_PER_SLOT))
        .max(1);
    if weight > crate::MAX_WEIGHT {
        return Err(LoadError::Limits(format!(
            "the component has {} linear memories and {} tables; at most {} and {} are allowed",
            r.num_memories,
            r.num_tables,
            crate::MAX_WEIGHT,
            crate::MAX_WEIGHT * crate::TABLES_PER_SLOT
        )));
    }
    Ok(weight)
}

/// Where the contract's exported interfaces are in a component: found once per module, so
/// that a call looks up (and type-checks) only the functions of the interface it calls,
/// not the whole world's as the generated `PluginPre` does.
struct Exports {
    metadata: metadata::GuestIndices,
    admission: admission::GuestIndices,
    conversion: conversion::GuestIndices,
    printer: printer::GuestIndices,
}

/// The exported interfaces of one instance, each looked up (and its functions
/// type-checked) on its first call: a reused instance, or a request's second hook, does
/// not pay for that again.
#[derive(Default)]
pub(crate) struct LoadedExports {
    metadata: Option<metadata::Guest>,
    admission: Option<admission::Guest>,
    conversion: Option<conversion::Guest>,
    printer: Option<printer::Guest>,
}

impl Exports {
    fn new(pre: &InstancePre<State>) -> wasmtime::Result<Exports> {
        Ok(Exports {
            metadata: metadata::GuestIndices::new(pre)?,
            admission: admission::GuestIndices::new(pre)?,
            conversion: conversion::GuestIndices::new(pre)?,
            printer: printer::GuestIndices::new(pre)?,
        })
    }
}

/// One call of a hook: `call!(self, slot, "hook", uid, interface.method(args))` runs in the
/// instance `slot` holds (the request's, from an earlier hook, or a reused one), or else
/// takes one of the plugin's instances and instantiates; calls `method` of the exported
/// `interface`, maps a failure to a [`CallError`] and traces the duration. After a
/// success the instance is left in `slot`; after a failure it is dropped. The plugin's
/// timeout bounds all of it: the wait for an instance, instantiation, the guest's code
/// and its host calls (a WASI sleep or poll). At the deadline a running guest is
/// interrupted (epoch) and a waiting one dropped (the call's future: wasmtime unwinds
/// the guest's stack; the store and its instance go with it).
macro_rules! call {
    ($self:ident, $slot:expr, $hook:literal, $uid:expr, $iface:ident . $method:ident ( $($arg:expr),* )) => {{
        let started = Instant::now();
        let deadline = started + $self.limits.timeout;
        let uid: Arc<str> = Arc::from($uid);
        let slot: &mut Option<Lease> = $slot;
        let start = match slot.take() {
            Some(lease) => Ok(lease),
            None => Err($self
                .share
                .acquire(&$self.global, $self.weight, deadline, $self.limits.timeout)
                .await?),
        };
        let run = async {
            let mut lease = match start {
                Ok(lease) => lease,
                Err(permits) => {
                    let (store, instance) = $self.instance(uid.clone(), deadline).await?;
                    Lease::new(store, instance, permits)
                }
            };
            lease.begin(&uid, deadline);
            let Lease { store, instance, exports, .. } = &mut lease;
            // The interface's functions, looked up and type-checked once per instance.
            let loaded = match exports.$iface.take() {
                Some(guest) => Ok(guest),
                None => $self.exports.$iface.load(&mut *store, instance),
            };
            let r = match loaded {
                Ok(guest) => {
                    let r = guest.$method(&mut *store $(, $arg)*).await;
                    exports.$iface = Some(guest);
                    r
                }
                Err(e) => Err(e),
            };
            match r {
                Ok(v) => Ok((v, lease)),
                Err(e) => Err($self.failed(&lease.store, &e)),
            }
        };
        let r = tokio::time::timeout_at(deadline, run)
            .await
            .unwrap_or(Err(CallError::Timeout($self.limits.timeout)));
        $self.finish(started, $hook);
        r.map(|(v, lease)| {
            *slot = Some(lease);
            v
        })
    }};
}

impl Plugin {
    pub fn name(&self) -> &str {
        &self.name
    }
    /// sha256 of the module, hex.
    pub fn digest(&self) -> &str {
        &self.digest
    }
    /// What the plugin says of itself.
    pub fn plugin_info(&self) -> &PluginInfo {
        &self.info
    }
    pub fn hooks(&self) -> Hooks {
        self.hooks
    }
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Its share of the instances now, and what was measured of it (shared by every
    /// version of the plugin's name).
    pub fn instance_stats(&self) -> InstanceStats {
        self.share.stats()
    }

    pub(crate) fn idle(&self) -> &Idle {
        &self.idle
    }

    /// How many instances this version keeps idle ([`Isolation::Reused`]).
    pub fn idle_instances(&self) -> usize {
        self.idle.len()
    }

    /// A request's calls of this plugin, in one instance (see [`Session`]).
    pub fn session(self: &Arc<Self>) -> Session {
        Session::new(self.clone())
    }

    /// A fresh store and instance for one call of request `uid`, under the call's
    /// `deadline` (instantiation runs guest code too) and the memory limit.
    async fn instance(
        &self,
        uid: Arc<str>,
        deadline: Instant,
    ) -> Result<(Store<State>, Instance), CallError> {
        let mut store = Store::new(
            &self.engine,
            State::new(
                self.share.clone(),
                uid,
                self.config.clone(),
                self.limits.memory_bytes,
            ),
        );
        store.limiter(|s| &mut s.limiter);
        arm(&mut store, deadline);
        let instance = self
            .pre
            .instantiate_async(&mut store)
            .await
            .map_err(|e| self.failed(&store, &e))?;
        Ok((store, instance))
    }

    /// What a failed call was.
    fn failed(&self, store: &Store<State>, e: &wasmtime::Error) -> CallError {
        if store.data().limiter.exceeded {
            return CallError::OutOfMemory(self.limits.memory_bytes);
        }
        if e.downcast_ref::<Trap>() == Some(&Trap::Interrupt) {
            return CallError::Timeout(self.limits.timeout);
        }
        CallError::Trap(crate::failure::describe(
            &self.name,
            e,
            &store.data().stderr(),
        ))
    }

    fn finish(&self, started: Instant, hook: &'static str) {
        tracing::trace!(plugin = %self.name, hook, elapsed = ?started.elapsed(), "plugin call");
    }

    /// The instance a one-off call may run in: an idle one under [`Isolation::Reused`].
    pub(crate) fn idle_slot(&self) -> Option<Lease> {
        match self.limits.isolation {
            Isolation::Reused => self.idle.take(),
            Isolation::PerRequest => None,
        }
    }

    /// After a one-off call: the instance it left (none after a failure) is given back.
    fn keep(&self, slot: Option<Lease>) {
        if let Some(lease) = slot {
            self.give_back(lease);
        }
    }

    /// `metadata.info`.
    pub async fn info(&self) -> Result<PluginInfo, CallError> {
        let mut slot = self.idle_slot();
        let r = call!(self, &mut slot, "info", "info", metadata.call_info());
        self.keep(slot);
        r
    }

    /// `admission.mutate`, in an instance of its own (see [`Session`] for a request's
    /// hooks in one).
    pub async fn mutate(&self, req: &AdmissionRequest) -> Result<AdmissionResponse, CallError> {
        let mut slot = self.idle_slot();
        let r = self.mutate_in(&mut slot, req).await;
        self.keep(slot);
        r
    }

    /// `admission.validate`, in an instance of its own.
    pub async fn validate(&self, req: &AdmissionRequest) -> Result<AdmissionResponse, CallError> {
        let mut slot = self.idle_slot();
        let r = self.validate_in(&mut slot, req).await;
        self.keep(slot);
        r
    }

    /// `admission.mutate` in the instance of `slot`.
    pub(crate) async fn mutate_in(
        &self,
        slot: &mut Option<Lease>,
        req: &AdmissionRequest,
    ) -> Result<AdmissionResponse, CallError> {
        let r = call!(self, slot, "mutate", &*req.uid, admission.call_mutate(req))
            .and_then(|resp| caps::admission(&resp).map(|()| resp));
        if r.is_err() {
            *slot = None;
        }
        r
    }

    /// `admission.validate` in the instance of `slot`.
    pub(crate) async fn validate_in(
        &self,
        slot: &mut Option<Lease>,
        req: &AdmissionRequest,
    ) -> Result<AdmissionResponse, CallError> {
        let r = call!(
            self,
            slot,
            "validate",
            &*req.uid,
            admission.call_validate(req)
        )
        .and_then(|resp| caps::admission(&resp).map(|()| resp));
        if r.is_err() {
            *slot = None;
        }
        r
    }

    /// `conversion.convert`: the objects in order, or the plugin's refusal.
    pub async fn convert(
        &self,
        req: &ConversionRequest,
    ) -> Result<Result<Vec<String>, Status>, CallError> {
        let mut slot = self.idle_slot();
        let r = call!(
            self,
            &mut slot,
            "convert",
            &*req.uid,
            conversion.call_convert(req)
        )?;
        caps::converted(&r)?;
        if let Ok(objs) = &r
            && objs.len() != req.objects.len()
        {
            return Err(CallError::Malformed(format!(
                "convert returned {} objects for {}",
                objs.len(),
                req.objects.len()
            )));
        }
        self.keep(slot);
        Ok(r)
    }

    /// `printer.columns`.
    pub async fn columns(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<Vec<ColumnDefinition>, CallError> {
        let mut slot = self.idle_slot();
        let columns = call!(
            self,
            &mut slot,
            "columns",
            "columns",
            printer.call_columns(api_version, kind)
        )?;
        caps::columns(&columns)?;
        self.keep(slot);
        Ok(columns)
    }

    /// `printer.rows`: one row of JSON cells per object, or the plugin's refusal.
    pub async fn rows(
        &self,
        api_version: &str,
        kind: &str,
        objects: &[String],
    ) -> Result<Result<Vec<Vec<String>>, Status>, CallError> {
        let mut slot = self.idle_slot();
        let r = call!(
            self,
            &mut slot,
            "rows",
            "rows",
            printer.call_rows(api_version, kind, objects)
        )?;
        caps::rows(&r)?;
        if let Ok(rows) = &r
            && rows.len() != objects.len()
        {
            return Err(CallError::Malformed(format!(
                "rows returned {} rows for {} objects",
                rows.len(),
                objects.len()
            )));
        }
        self.keep(slot);
        Ok(r)
    }
}
