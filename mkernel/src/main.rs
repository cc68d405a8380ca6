//! `mkernel`: benchmarks of the fused kernels against their unfused baselines on the
//! GPUs present (`mkernel bench ...`), the plans calls would run, without a GPU (`mkernel
//! plan ...`), and a catalog compile (`mkernel compile`).

mod bench;
mod plan_cmd;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "mkernel", version, about = "mkernel fused multi-GPU kernels: benchmarks and tools")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a benchmark (fused kernel vs unfused baseline, same inputs, one process).
    #[command(subcommand)]
    Bench(bench::BenchCmd),
    /// Print what a call of each shape would run (tile, split, path, SM partition), without
    /// a GPU: the default rules, or the overrides given, on a described machine.
    #[command(subcommand)]
    Plan(plan_cmd::PlanCmd),
    /// Compile every kernel instantiation of the catalog with NVRTC (fills the cache).
    Compile,
}

fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("MKERNEL_LOG").unwrap_or_else(|_| "warn".into()))
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.cmd {
        Cmd::Bench(b) => bench::run(b),
        Cmd::Plan(p) => plan_cmd::run(p),
        Cmd::Compile => bench::compile_catalog(),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            // (2 for an argument error, as clap's own; 1 for anything else)
            std::process::ExitCode::from(bench::exit_status(e.as_ref()))
        }
    }
}
