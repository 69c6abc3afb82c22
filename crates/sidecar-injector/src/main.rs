//! Entry point of the `sidecar-injector` binary; everything happens in [`sidecar_injector::cli`].

/// Injection builds and drops many small JSON and YAML nodes per admission; mimalloc serves them
/// markedly faster than glibc's malloc (see `cargo bench -p injector-engine --bench inject`).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    sidecar_injector::cli::run()
}
