//! Flags of the process group: how many threads run `batond`'s tasks.

use clap::Args;

#[derive(Debug, Args)]
#[command(next_help_heading = "Process")]
pub(crate) struct RuntimeArgs {
    /// Threads that run the process's tasks (HTTP and gRPC requests, activities, Redis and
    /// Temporal calls). 1, the default, runs them all on one thread: no task wakes another
    /// thread, and a round costs the least CPU (docs/benchmarks.md, issue 40). More spread a busy
    /// server's requests over as many cores. The Temporal SDK keeps a thread of its own for the
    /// workflows' state machines either way, and blocking work has its own pool.
    #[arg(
        long,
        env = "BATON_THREADS",
        default_value_t = 1,
        value_parser = clap::value_parser!(u16).range(1..=1024),
        global = true
    )]
    pub(crate) threads: u16,
}

impl RuntimeArgs {
    /// The runtime the process runs on: one thread, or a pool of `threads`.
    pub(crate) fn runtime(&self) -> std::io::Result<tokio::runtime::Runtime> {
        let mut builder = if self.threads == 1 {
            tokio::runtime::Builder::new_current_thread()
        } else {
            let mut pool = tokio::runtime::Builder::new_multi_thread();
            pool.worker_threads(usize::from(self.threads));
            pool
        };
        builder.enable_all().build()
    }
}
