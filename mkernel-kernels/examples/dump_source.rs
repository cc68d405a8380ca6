//! Prints the generated source of every catalog instantiation whose name contains the
//! first argument (for reading, or for compiling by hand with extra flags).
fn main() -> Result<(), mkernel_kernels::Error> {
    let filter = std::env::args().nth(1).unwrap_or_default();
    for src in mkernel_kernels::catalog::all()? {
        if src.name.contains(&filter) {
            println!("// ==== {} ====\n{}", src.name, src.source);
        }
    }
    Ok(())
}
