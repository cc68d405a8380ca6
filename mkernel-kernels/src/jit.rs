//! Run-time compilation with NVRTC for `sm_90a`, and the on-disk cubin cache.
//!
//! Cache key (as in DeepGEMM's JIT): kernel name + NVRTC version + options + the full
//! generated source, hashed with SHA-256. A hit loads the cubin without calling NVRTC.
//! Entries are written to a temporary file in the cache directory and renamed into
//! place, so concurrent processes never observe a torn file; a file that is not an ELF
//! image is treated as a miss and rewritten.

use std::collections::HashMap;
use std::ffi::{c_char, CString};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use cudarc::nvrtc::{result as nvrtc, sys as nvrtc_sys};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// GPU architecture every catalog kernel is compiled for (wgmma and setmaxnreg need the
/// architecture-specific `a` target).
pub const ARCH: &str = "sm_90a";

/// A generated kernel ready for NVRTC.
#[derive(Debug, Clone)]
pub struct KernelSource {
    /// Instantiation name, also the `extern "C"` entry point.
    pub name: String,
    /// Self-contained source (headers expanded, see [`crate::source::expand`]).
    pub source: String,
    /// Whether the source includes CUDA toolkit headers (then they must be found).
    pub needs_toolkit_headers: bool,
}

impl KernelSource {
    /// A kernel whose entry point `name` takes one `params` struct (by value, as
    /// `__grid_constant__`) and calls `mk::{body}(p)` from `header` (relative to
    /// `src/cuda`): the shape of every small utility kernel (fill, check, barrier, gate).
    pub fn single_call(name: &str, header: &str, params: &str, body: &str) -> Result<Self> {
        let entry = format!(
            "#include \"{header}\"\n\
             extern \"C\" __global__ void {name}(const __grid_constant__ {params} p) {{ mk::{body}(p); }}\n"
        );
        Ok(Self { name: name.to_string(), source: crate::source::expand(&entry)?, needs_toolkit_headers: false })
    }
}

/// A compiled kernel image.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// The cubin (ELF) for [`ARCH`].
    pub cubin: Arc<Vec<u8>>,
    /// True when the image came from the disk cache (no NVRTC call was made).
    pub from_cache: bool,
    /// Where the image is cached, if caching is on.
    pub path: Option<PathBuf>,
    /// ptxas's performance notes for the kernel ([`performance_notes`]: serialised
    /// wgmma, injected `warpgroup.wait`s, ignored `setmaxnreg`); empty when loaded from
    /// the cache.
    pub performance_notes: Vec<String>,
    /// ptxas's spill stores for the kernel, bytes ([`spill_store_bytes`]); `None` when
    /// loaded from the cache.
    pub spill_store_bytes: Option<u64>,
}

/// The lines of a ptxas report (NVRTC's log with `--ptxas-options=-v`) that say the
/// compiler gave up performance the source asked for: "Potential Performance Loss: ..."
/// (C7510-C7520: wgmma.mma_async instructions serialised; `setmaxnreg` ignored) and
/// "warpgroup.wait is injected ... registers defined by GMMA". Each is silent otherwise:
/// one serialisation note made every fused call 10-20% slower (bench/NOTES.md 10.6)
/// without an error or a spill. Other -v lines (registers, spills, "Compiling entry
/// function ...", whatever the kernel is called) are not notes.
pub fn performance_notes(log: &str) -> Vec<String> {
    log.lines()
        .filter(|l| l.starts_with("ptxas"))
        .filter(|l| l.contains("Potential Performance Loss") || (l.contains("is injected") && l.contains("GMMA")))
        .map(|l| l.trim().to_string())
        .collect()
}

/// Bytes of spill stores in a ptxas report (NVRTC's log with `--ptxas-options=-v`): the
/// sum over the report's functions of their "N bytes spill stores" (registers the code
/// needed past its budget, stored to local memory and loaded back). 0 where none is
/// reported.
pub fn spill_store_bytes(log: &str) -> u64 {
    log.lines()
        .filter(|l| l.starts_with("ptxas"))
        .filter_map(|l| {
            let end = l.find(" bytes spill stores")?;
            l[..end].rsplit(|c: char| !c.is_ascii_digit()).next()?.parse::<u64>().ok()
        })
        .fold(0u64, u64::saturating_add)
}

/// True when libnvrtc can be loaded on this machine.
pub fn nvrtc_available() -> bool {
    // SAFETY: only tries to dlopen candidate library names.
    unsafe { nvrtc_sys::is_culib_present() }
}

/// For tests that need NVRTC: `Ok(true)` when it is available; `Ok(false)` after
/// printing why the test is skipped; `Err` (naming the test) when
/// `MKERNEL_REQUIRE_NVRTC=1` or `MKERNEL_REQUIRE_GPU=1` says it must be there.
pub fn nvrtc_or_skip(test: &str) -> std::result::Result<bool, String> {
    if nvrtc_available() {
        return Ok(true);
    }
    let required = ["MKERNEL_REQUIRE_NVRTC", "MKERNEL_REQUIRE_GPU"]
        .iter()
        .any(|v| std::env::var(v).is_ok_and(|x| x == "1"));
    if required {
        return Err(format!("{test}: NVRTC (libnvrtc.so.13) not found but MKERNEL_REQUIRE_NVRTC/GPU=1"));
    }
    // Straight to the stderr handle: the harness captures `eprintln!` (skips must show).
    let _ = std::io::Write::write_all(&mut std::io::stderr(), format!("SKIP {test}: {}\n", Error::NvrtcMissing).as_bytes());
    Ok(false)
}

/// NVRTC version as (major, minor).
pub fn nvrtc_version() -> Result<(i32, i32)> {
    if !nvrtc_available() {
        return Err(Error::NvrtcMissing);
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: out-pointers to live locals.
    unsafe { nvrtc_sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|e| Error::Nvrtc { call: "nvrtcVersion", detail: format!("{e:?}") })?;
    Ok((major, minor))
}

/// Directories searched for CUDA toolkit headers, in order: `$CUDA_HOME/include`,
/// `$CUDA_PATH/include`, `/usr/local/cuda/include`, and for each directory on
/// `LD_LIBRARY_PATH` its sibling `include/` (the layout of the `nvidia-cuda-*` pip
/// wheels: `nvidia/cu13/lib` next to `nvidia/cu13/include`).
pub fn header_search_path() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(v) = std::env::var_os(var) {
            dirs.push(PathBuf::from(v).join("include"));
        }
    }
    dirs.push(PathBuf::from("/usr/local/cuda/include"));
    if let Some(paths) = std::env::var_os("LD_LIBRARY_PATH") {
        for lib in std::env::split_paths(&paths) {
            if let Some(parent) = lib.parent() {
                dirs.push(parent.join("include"));
            }
        }
    }
    dirs
}

/// The first directory of `candidates` holding `cuda.h`, plus its `cccl/` subdirectory
/// when present (the wheels keep `cuda/ptx` there).
pub fn find_toolkit_headers(candidates: &[PathBuf]) -> Result<Vec<PathBuf>> {
    for dir in candidates {
        if dir.join("cuda.h").is_file() {
            let mut found = vec![dir.clone()];
            let cccl = dir.join("cccl");
            if cccl.is_dir() {
                found.push(cccl);
            }
            return Ok(found);
        }
    }
    Err(Error::HeadersNotFound { searched: candidates.to_vec() })
}

/// Default cache directory: `$MKERNEL_CACHE_DIR` (the one diagnostic variable read here), else
/// `$XDG_CACHE_HOME/mkernel`, else `$HOME/.cache/mkernel`, else the temp dir.
/// Empty values count as unset.
pub fn default_cache_dir() -> PathBuf {
    let set = |var: &str| std::env::var_os(var).filter(|v| !v.is_empty());
    if let Some(dir) = set("MKERNEL_CACHE_DIR") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = set("XDG_CACHE_HOME") {
        return PathBuf::from(dir).join("mkernel");
    }
    if let Some(home) = set("HOME") {
        return PathBuf::from(home).join(".cache").join("mkernel");
    }
    std::env::temp_dir().join("mkernel-cache")
}

/// NVRTC front end with a disk cache and an in-process memo.
pub struct Compiler {
    cache_dir: Option<PathBuf>,
    options: Vec<String>,
    memo: Mutex<HashMap<String, Arc<Vec<u8>>>>,
}

impl std::fmt::Debug for Compiler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compiler").field("cache_dir", &self.cache_dir).field("options", &self.options).finish()
    }
}

impl Compiler {
    /// A compiler caching under `cache_dir` (`None` disables the disk cache).
    pub fn new(cache_dir: Option<PathBuf>) -> Self {
        let options = vec![
            format!("--gpu-architecture={ARCH}"),
            "--std=c++17".to_string(),
            "--device-as-default-execution-space".to_string(),
            "--generate-line-info".to_string(),
            // ptxas's per-kernel report in the log, for its performance notes (see performance_notes)
            "--ptxas-options=-v".to_string(),
        ];
        Self { cache_dir, options, memo: Mutex::new(HashMap::new()) }
    }

    /// The disk cache's directory (`None`: no disk cache).
    pub fn cache_dir(&self) -> Option<&std::path::Path> {
        self.cache_dir.as_deref()
    }

    /// The options passed to NVRTC (without include directories).
    pub fn options(&self) -> &[String] {
        &self.options
    }

    /// Cache key of `src` under this compiler's NVRTC version and options.
    pub fn cache_key(&self, src: &KernelSource, version: (i32, i32)) -> String {
        let mut h = Sha256::new();
        h.update(src.name.as_bytes());
        h.update([0]);
        h.update(format!("nvrtc {}.{}", version.0, version.1).as_bytes());
        h.update([0]);
        for o in &self.options {
            h.update(o.as_bytes());
            h.update([0]);
        }
        h.update(src.source.as_bytes());
        let digest = h.finalize();
        digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
    }

    /// Compiles `src` to a cubin, or loads it from the cache.
    pub fn compile(&self, src: &KernelSource) -> Result<Compiled> {
        let version = nvrtc_version()?;
        let key = self.cache_key(src, version);
        if let Ok(memo) = self.memo.lock() {
            if let Some(img) = memo.get(&key) {
                return Ok(Compiled { cubin: img.clone(), from_cache: true, path: self.entry_path(&src.name, &key), performance_notes: Vec::new(), spill_store_bytes: None });
            }
        }
        let path = self.entry_path(&src.name, &key);
        if let Some(p) = &path {
            if let Ok(bytes) = std::fs::read(p) {
                if bytes.starts_with(b"\x7fELF") {
                    tracing::debug!(kernel = %src.name, path = %p.display(), "JIT cache hit");
                    let img = Arc::new(bytes);
                    self.remember(&key, &img);
                    return Ok(Compiled { cubin: img, from_cache: true, path, performance_notes: Vec::new(), spill_store_bytes: None });
                }
                tracing::warn!(path = %p.display(), "ignoring a corrupt JIT cache entry");
            }
        }
        let started = std::time::Instant::now();
        let includes = if src.needs_toolkit_headers { find_toolkit_headers(&header_search_path())? } else { Vec::new() };
        let (cubin, log) = compile_cubin(&src.name, &src.source, &self.options, &includes)?;
        tracing::debug!(kernel = %src.name, ms = started.elapsed().as_millis() as u64, bytes = cubin.len(), "NVRTC compiled");
        let performance_notes = performance_notes(&log);
        for note in &performance_notes {
            tracing::warn!(kernel = %src.name, "{note}");
        }
        // A cache that cannot be written costs a recompilation next time, not the launch.
        let path = path.filter(|p| match store_atomically(p, &cubin) {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!("{e}; continuing without caching (set MKERNEL_CACHE_DIR to a writable directory)");
                false
            }
        });
        let img = Arc::new(cubin);
        self.remember(&key, &img);
        Ok(Compiled { cubin: img, from_cache: false, path, performance_notes, spill_store_bytes: Some(spill_store_bytes(&log)) })
    }

    /// Forgets `src` (in-process memo and disk entry), e.g. after a cached image failed
    /// to load; the next [`Compiler::compile`] runs NVRTC again.
    pub fn invalidate(&self, src: &KernelSource) -> Result<()> {
        let key = self.cache_key(src, nvrtc_version()?);
        if let Ok(mut memo) = self.memo.lock() {
            memo.remove(&key);
        }
        if let Some(p) = self.entry_path(&src.name, &key) {
            let _ = std::fs::remove_file(p);
        }
        Ok(())
    }

    fn remember(&self, key: &str, img: &Arc<Vec<u8>>) {
        if let Ok(mut memo) = self.memo.lock() {
            memo.insert(key.to_string(), img.clone());
        }
    }

    fn entry_path(&self, name: &str, key: &str) -> Option<PathBuf> {
        self.cache_dir.as_ref().map(|d| d.join(format!("{name}-{key}.cubin")))
    }
}

fn store_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    std::fs::create_dir_all(dir).map_err(|source| Error::Cache { path: dir.to_path_buf(), source })?;
    let cache_err = |source| Error::Cache { path: path.to_path_buf(), source };
    let tmp = dir.join(format!(
        ".{}.{}.{:?}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("entry"),
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::write(&tmp, bytes).map_err(cache_err)?;
    std::fs::rename(&tmp, path).map_err(cache_err)
}

fn nvrtc_err(call: &'static str) -> impl Fn(nvrtc::NvrtcError) -> Error {
    move |e| Error::Nvrtc { call, detail: format!("{e:?}") }
}

/// One NVRTC compilation: the cubin and NVRTC's log (with the options' ptxas report).
/// The program is destroyed on every path.
fn compile_cubin(name: &str, source: &str, options: &[String], includes: &[PathBuf]) -> Result<(Vec<u8>, String)> {
    if !nvrtc_available() {
        return Err(Error::NvrtcMissing);
    }
    let c_src = CString::new(source).map_err(|_| crate::error::invalid("source", "contains a NUL byte"))?;
    let c_name = CString::new(format!("{name}.cu")).map_err(|_| crate::error::invalid("name", "contains a NUL byte"))?;
    let prog = nvrtc::create_program(&c_src, Some(&c_name)).map_err(nvrtc_err("nvrtcCreateProgram"))?;
    struct Guard(nvrtc_sys::nvrtcProgram);
    impl Drop for Guard {
        fn drop(&mut self) {
            // SAFETY: created above and destroyed only here.
            let _ = unsafe { nvrtc::destroy_program(self.0) };
        }
    }
    let guard = Guard(prog);
    let mut opts: Vec<String> = options.to_vec();
    for dir in includes {
        opts.push(format!("--include-path={}", dir.display()));
    }
    // SAFETY: `prog` is live (owned by `guard`).
    let compiled = unsafe { nvrtc::compile_program(guard.0, &opts) };
    // SAFETY: as above. (After a successful compile the log is only read for ptxas's
    // notes: if NVRTC cannot give it, the kernel is still good.)
    let log = match unsafe { nvrtc::get_program_log(guard.0) } {
        Ok(chars) => String::from_utf8_lossy(&chars.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect::<Vec<u8>>()).into_owned(),
        Err(e) if compiled.is_err() => return Err(nvrtc_err("nvrtcGetProgramLog")(e)),
        Err(_) => String::new(),
    };
    if compiled.is_err() {
        return Err(Error::Compile { kernel: name.to_string(), log });
    }
    let mut size = 0usize;
    // SAFETY: `prog` compiled successfully; out-pointer to a live local.
    unsafe { nvrtc_sys::nvrtcGetCUBINSize(guard.0, &mut size) }.result().map_err(nvrtc_err("nvrtcGetCUBINSize"))?;
    let mut cubin = vec![0u8; size];
    // SAFETY: the buffer holds `size` bytes as NVRTC asked.
    unsafe { nvrtc_sys::nvrtcGetCUBIN(guard.0, cubin.as_mut_ptr() as *mut c_char) }
        .result()
        .map_err(nvrtc_err("nvrtcGetCUBIN"))?;
    Ok((cubin, log))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(name: &str, body: &str) -> KernelSource {
        KernelSource { name: name.into(), source: body.into(), needs_toolkit_headers: false }
    }

    #[test]
    fn cache_key_changes_with_source_name_and_version() {
        let c = Compiler::new(None);
        let a = c.cache_key(&src("k", "int a;"), (13, 0));
        assert_ne!(a, c.cache_key(&src("k", "int b;"), (13, 0)));
        assert_ne!(a, c.cache_key(&src("j", "int a;"), (13, 0)));
        assert_ne!(a, c.cache_key(&src("k", "int a;"), (13, 1)));
        assert_eq!(a, c.cache_key(&src("k", "int a;"), (13, 0)));
    }

    #[test]
    fn header_search_reports_where_it_looked() {
        let dir = tempfile::tempdir().unwrap();
        let missing = vec![dir.path().join("a"), dir.path().join("b")];
        let err = find_toolkit_headers(&missing).unwrap_err().to_string();
        assert!(err.contains(&missing[0].display().to_string()) && err.contains(&missing[1].display().to_string()), "{err}");
        std::fs::create_dir_all(dir.path().join("b/cccl")).unwrap();
        std::fs::write(dir.path().join("b/cuda.h"), "").unwrap();
        let found = find_toolkit_headers(&missing).unwrap();
        assert_eq!(found, vec![dir.path().join("b"), dir.path().join("b/cccl")]);
    }

    #[test]
    fn unwritable_cache_is_an_error_naming_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        std::fs::write(&file, "x").unwrap();
        let e = store_atomically(&file.join("sub/x.cubin"), b"\x7fELF").unwrap_err().to_string();
        assert!(e.contains(&file.join("sub").display().to_string()), "{e}");
    }

    #[test]
    fn atomic_store_replaces_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/x.cubin");
        store_atomically(&p, b"\x7fELFone").unwrap();
        store_atomically(&p, b"\x7fELFtwo!").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"\x7fELFtwo!");
        let leftovers: Vec<_> = std::fs::read_dir(dir.path().join("sub")).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary files left behind");
    }
}
