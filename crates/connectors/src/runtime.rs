//! The runtime a reader that talks to an upstream (Kafka, Postgres CDC) owns on its thread.

use std::future::Future;

use crate::ConnectorError;

/// A reader's own tokio runtime. It may be dropped anywhere, also on an async thread: its
/// tasks are shut down in the background.
pub(crate) struct ReaderRuntime(Option<tokio::runtime::Runtime>);

impl ReaderRuntime {
    /// A runtime driven only while the reader awaits a request.
    pub(crate) fn current_thread() -> Result<Self, ConnectorError> {
        Self::build(tokio::runtime::Builder::new_current_thread())
    }

    /// A runtime with one worker thread named `name`, which keeps a session alive (answers
    /// keepalives) between the reader's requests.
    pub(crate) fn one_worker(name: &str) -> Result<Self, ConnectorError> {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.worker_threads(1).thread_name(name);
        Self::build(builder)
    }

    fn build(mut builder: tokio::runtime::Builder) -> Result<Self, ConnectorError> {
        let runtime = builder
            .enable_all()
            .build()
            .map_err(|e| ConnectorError::Upstream(format!("cannot start a runtime: {e}")))?;
        Ok(Self(Some(runtime)))
    }

    /// Runs `future` to completion on the runtime.
    pub(crate) fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.0
            .as_ref()
            .expect("invariant: the runtime lives until the reader is dropped")
            .block_on(future)
    }
}

impl Drop for ReaderRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}
