//! Entry point of the `sidecar-injector` binary; everything happens in [`sidecar_injector::cli`].

fn main() -> std::process::ExitCode {
    sidecar_injector::cli::run()
}
