//! Drop guards of nested calls: they release what a dropped or panicking task still holds.

use std::sync::Arc;

use tokio::runtime::Handle;

use crate::code::adapters::{GateRequest, HostGate};

/// Aborts a spawned executor task when the waiting side goes away (sealed cell, dropped task).
pub(super) struct AbortOnDrop(pub(super) tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A held host file lease (Pi's file mutation queue). Dropping it without [`LeaseGuard::release`] (task dropped,
/// panic, runtime shutdown) still sends the "unlock" request, so Pi's own edit/write never wait forever.
pub(super) struct LeaseGuard {
    pub(super) gate: Arc<dyn HostGate>,
    pub(super) rt: Handle,
    pub(super) unlock: Option<GateRequest>,
}

impl LeaseGuard {
    pub(super) fn new(gate: Arc<dyn HostGate>, rt: Handle, unlock: GateRequest) -> Self {
        LeaseGuard {
            gate,
            rt,
            unlock: Some(unlock),
        }
    }

    /// Sends "unlock" and waits for the host's answer. A failed answer is not retried here: the TypeScript side
    /// releases every outstanding lease when Code Mode is cleaned up or shut down.
    pub(super) async fn release(mut self) {
        if let Some(req) = self.unlock.take() {
            let _ = self.gate.ask(req).await;
        }
    }
}

impl Drop for LeaseGuard {
    fn drop(&mut self) {
        if let Some(req) = self.unlock.take() {
            self.rt.spawn(self.gate.ask(req));
        }
    }
}
