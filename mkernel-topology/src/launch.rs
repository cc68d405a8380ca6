//! The job layout as the launcher describes it.
//!
//! `torchrun` (and the `srun` wrappers written to look like it) start one process per
//! GPU and tell each one where it sits through six environment variables. This module
//! reads and checks them, once, and nothing else in mkernel reads them.
//!
//! Ranks are numbered node by node:
//!
//! ```text
//!              local rank: 0   1   2   3
//!   node 0 (node_rank 0):  r0  r1  r2  r3      LOCAL_WORLD_SIZE = 4
//!   node 1 (node_rank 1):  r4  r5  r6  r7      WORLD_SIZE       = 8
//!
//!   RANK = node_rank * LOCAL_WORLD_SIZE + LOCAL_RANK
//! ```

use std::fmt;

use crate::error::{Error, Result};

/// Global rank of this process, `0..WORLD_SIZE`.
pub const RANK: &str = "RANK";
/// Number of processes in the job.
pub const WORLD_SIZE: &str = "WORLD_SIZE";
/// Rank of this process on its node, `0..LOCAL_WORLD_SIZE`.
pub const LOCAL_RANK: &str = "LOCAL_RANK";
/// Number of processes on each node (the same on every node).
pub const LOCAL_WORLD_SIZE: &str = "LOCAL_WORLD_SIZE";
/// Host name or IP address on which rank 0 listens for the bootstrap.
pub const MASTER_ADDR: &str = "MASTER_ADDR";
/// TCP port on which rank 0 listens for the bootstrap.
pub const MASTER_PORT: &str = "MASTER_PORT";

/// Where this process sits in the job, and where rank 0 listens.
///
/// Build it with [`LaunchEnv::from_env`] under a launcher, or fill the fields yourself
/// and call [`LaunchEnv::validate`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LaunchEnv {
    /// Global rank, `0..world_size` (`RANK`).
    pub rank: usize,
    /// Number of ranks in the job, at least 1 (`WORLD_SIZE`).
    pub world_size: usize,
    /// Rank on this node, `0..local_world_size` (`LOCAL_RANK`).
    pub local_rank: usize,
    /// Ranks per node, at least 1, dividing `world_size` (`LOCAL_WORLD_SIZE`).
    pub local_world_size: usize,
    /// Host name or IP address of rank 0's bootstrap listener (`MASTER_ADDR`).
    pub master_addr: String,
    /// TCP port of rank 0's bootstrap listener, `1..=65535` (`MASTER_PORT`).
    pub master_port: u16,
}

impl LaunchEnv {
    /// Reads the layout from this process's environment (`RANK`, `WORLD_SIZE`,
    /// `LOCAL_RANK`, `LOCAL_WORLD_SIZE`, `MASTER_ADDR`, `MASTER_PORT`) and validates it.
    ///
    /// # Errors
    /// [`Error::EnvMissing`] naming the first unset variable, or [`Error::EnvInvalid`]
    /// naming the variable and the rule it breaks (see [`LaunchEnv::validate`]).
    pub fn from_env() -> Result<Self> {
        let env = Self::from_lookup(|name| {
            std::env::var_os(name).map(|v| v.to_string_lossy().into_owned())
        })?;
        tracing::debug!(%env, "launch layout read from the environment");
        Ok(env)
    }

    /// Like [`LaunchEnv::from_env`], but reads each variable through `lookup`
    /// (`None` = unset). Used by tests and by callers with their own configuration source.
    ///
    /// # Errors
    /// As [`LaunchEnv::from_env`].
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let get = |var: &'static str| lookup(var).ok_or(Error::EnvMissing { var });
        let count = |var: &'static str| -> Result<usize> {
            let value = get(var)?;
            value
                .trim()
                .parse::<usize>()
                .map_err(|_| Error::EnvInvalid {
                    var,
                    value: value.clone(),
                    rule: "expected a non-negative integer".into(),
                })
        };

        let rank = count(RANK)?;
        let world_size = count(WORLD_SIZE)?;
        let local_rank = count(LOCAL_RANK)?;
        let local_world_size = count(LOCAL_WORLD_SIZE)?;
        let master_addr = get(MASTER_ADDR)?.trim().to_owned();
        let port_text = get(MASTER_PORT)?;
        let master_port = match port_text.trim().parse::<u64>() {
            Ok(p) => u16::try_from(p).unwrap_or(0),
            Err(_) => 0,
        };
        if master_port == 0 {
            return Err(Error::EnvInvalid {
                var: MASTER_PORT,
                value: port_text,
                rule: "expected a TCP port in 1..=65535".into(),
            });
        }

        let env = LaunchEnv {
            rank,
            world_size,
            local_rank,
            local_world_size,
            master_addr,
            master_port,
        };
        env.validate()?;
        Ok(env)
    }

    /// Checks the layout rules; every error names the variable and the rule:
    /// - `WORLD_SIZE >= 1` and `LOCAL_WORLD_SIZE >= 1`;
    /// - `RANK < WORLD_SIZE` and `LOCAL_RANK < LOCAL_WORLD_SIZE`;
    /// - `WORLD_SIZE % LOCAL_WORLD_SIZE == 0` (every node runs the same number of ranks);
    /// - `LOCAL_RANK == RANK % LOCAL_WORLD_SIZE` (ranks numbered node by node, as
    ///   `torchrun` and `srun --distribution=block` do);
    /// - `MASTER_ADDR` not empty, `MASTER_PORT` not 0.
    ///
    /// # Errors
    /// [`Error::EnvInvalid`] for the first rule broken.
    pub fn validate(&self) -> Result<()> {
        let invalid =
            |var: &'static str, value: &dyn fmt::Display, rule: String| Error::EnvInvalid {
                var,
                value: value.to_string(),
                rule,
            };
        if self.world_size == 0 {
            return Err(invalid(
                WORLD_SIZE,
                &self.world_size,
                "must be at least 1".into(),
            ));
        }
        if self.local_world_size == 0 {
            return Err(invalid(
                LOCAL_WORLD_SIZE,
                &self.local_world_size,
                "must be at least 1".into(),
            ));
        }
        if self.rank >= self.world_size {
            return Err(invalid(
                RANK,
                &self.rank,
                format!("must be less than WORLD_SIZE={}", self.world_size),
            ));
        }
        if self.local_rank >= self.local_world_size {
            return Err(invalid(
                LOCAL_RANK,
                &self.local_rank,
                format!(
                    "must be less than LOCAL_WORLD_SIZE={}",
                    self.local_world_size
                ),
            ));
        }
        if !self.world_size.is_multiple_of(self.local_world_size) {
            return Err(invalid(
                WORLD_SIZE,
                &self.world_size,
                format!(
                    "must be a multiple of LOCAL_WORLD_SIZE={} (every node must run the same number of ranks)",
                    self.local_world_size
                ),
            ));
        }
        let expected_local = self.rank % self.local_world_size;
        if self.local_rank != expected_local {
            return Err(invalid(
                LOCAL_RANK,
                &self.local_rank,
                format!(
                    "must equal RANK % LOCAL_WORLD_SIZE = {} % {} = {expected_local}: ranks must be numbered \
                     node by node, RANK = node_rank * LOCAL_WORLD_SIZE + LOCAL_RANK (srun \
                     --distribution=cyclic is not supported)",
                    self.rank, self.local_world_size
                ),
            ));
        }
        if self.master_addr.trim().is_empty() {
            return Err(invalid(
                MASTER_ADDR,
                &self.master_addr,
                "must not be empty".into(),
            ));
        }
        if self.master_port == 0 {
            return Err(invalid(
                MASTER_PORT,
                &self.master_port,
                "expected a TCP port in 1..=65535".into(),
            ));
        }
        Ok(())
    }

    /// Index of this rank's node, `rank / local_world_size`, in `0..num_nodes()`.
    pub fn node_rank(&self) -> usize {
        self.rank / self.local_world_size.max(1)
    }

    /// Number of nodes, `world_size / local_world_size`.
    pub fn num_nodes(&self) -> usize {
        self.world_size / self.local_world_size.max(1)
    }
}

impl fmt::Display for LaunchEnv {
    /// `rank 5/8 (node 1/2, local rank 1/4), master 10.0.0.1:29500`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rank {}/{} (node {}/{}, local rank {}/{}), master {}:{}",
            self.rank,
            self.world_size,
            self.node_rank(),
            self.num_nodes(),
            self.local_rank,
            self.local_world_size,
            self.master_addr,
            self.master_port
        )
    }
}

/// First port [`loopback_port_pair`] considers: below Linux's default ephemeral range
/// (`net.ipv4.ip_local_port_range`, 32768-60999).
const LOOPBACK_PORT_FIRST: u16 = 20000;
/// Ports [`loopback_port_pair`] considers, from [`LOOPBACK_PORT_FIRST`]: up to 29399,
/// below torchrun's default `MASTER_PORT` (29500).
const LOOPBACK_PORTS: u16 = 9400;

/// A loopback TCP port `p` for `MASTER_PORT` where `p` and `p + 1` (the communicator's
/// rendezvous takes `MASTER_PORT + 1` by default) were both free when checked, for
/// launchers that start every rank on this machine (`mkernel bench --procs`, tests).
///
/// Why not a port found by binding port 0: that is an ephemeral port, and outgoing
/// connections (another job's ranks connecting to their rank 0, say) take ephemeral
/// ports, so one can take it between this check and rank 0's bind (seen in CI with
/// several multi-process tests at once: "Address already in use"). The ports here lie
/// below the default ephemeral range (and below torchrun's 29500); pairs start on even
/// ports, so two pairs never overlap; each call in a process takes the pair after the
/// previous one's, and processes start at different pairs (by process id).
///
/// Errors: [`Error::Listen`] if no such pair is free among the ports considered.
pub fn loopback_port_pair() -> Result<u16> {
    use std::net::TcpListener;
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let pairs = (LOOPBACK_PORTS / 2) as u32;
    let start = std::process::id().wrapping_mul(7919);
    let mut last_error = None;
    for _ in 0..pairs {
        let i = NEXT.fetch_add(1, Ordering::Relaxed);
        let p = LOOPBACK_PORT_FIRST + 2 * (start.wrapping_add(i) % pairs) as u16;
        match (TcpListener::bind(("127.0.0.1", p)), TcpListener::bind(("127.0.0.1", p + 1))) {
            (Ok(_), Ok(_)) => return Ok(p),
            (Err(e), _) | (_, Err(e)) => last_error = Some(e),
        }
    }
    Err(Error::Listen {
        addr: format!("127.0.0.1:{LOOPBACK_PORT_FIRST}-{}", LOOPBACK_PORT_FIRST + LOOPBACK_PORTS),
        source: last_error.unwrap_or_else(|| std::io::Error::from(std::io::ErrorKind::AddrInUse)),
        hint: " (no two neighbouring loopback ports free in that range)",
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    /// A complete, valid environment: rank 5 of 8, 4 ranks per node.
    fn good() -> HashMap<&'static str, String> {
        HashMap::from([
            (RANK, "5".to_owned()),
            (WORLD_SIZE, "8".to_owned()),
            (LOCAL_RANK, "1".to_owned()),
            (LOCAL_WORLD_SIZE, "4".to_owned()),
            (MASTER_ADDR, "10.0.0.1".to_owned()),
            (MASTER_PORT, "29500".to_owned()),
        ])
    }

    fn parse(vars: &HashMap<&'static str, String>) -> Result<LaunchEnv> {
        LaunchEnv::from_lookup(|name| vars.get(name).cloned())
    }

    /// Parses `good()` with `var` replaced by `value` and returns the error text.
    fn error_with(var: &'static str, value: &str) -> String {
        let mut vars = good();
        vars.insert(var, value.to_owned());
        match parse(&vars) {
            Ok(env) => panic!("{var}={value:?} was accepted: {env:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn parses_a_valid_layout() {
        let env = parse(&good()).unwrap();
        assert_eq!(
            env,
            LaunchEnv {
                rank: 5,
                world_size: 8,
                local_rank: 1,
                local_world_size: 4,
                master_addr: "10.0.0.1".into(),
                master_port: 29500,
            }
        );
        assert_eq!(env.node_rank(), 1);
        assert_eq!(env.num_nodes(), 2);
        assert_eq!(
            env.to_string(),
            "rank 5/8 (node 1/2, local rank 1/4), master 10.0.0.1:29500"
        );
    }

    #[test]
    fn surrounding_whitespace_is_ignored() {
        let mut vars = good();
        vars.insert(RANK, " 5\n".into());
        vars.insert(MASTER_ADDR, " host-0 ".into());
        let env = parse(&vars).unwrap();
        assert_eq!(env.rank, 5);
        assert_eq!(env.master_addr, "host-0");
    }

    #[test]
    fn each_missing_variable_is_named() {
        for var in [
            RANK,
            WORLD_SIZE,
            LOCAL_RANK,
            LOCAL_WORLD_SIZE,
            MASTER_ADDR,
            MASTER_PORT,
        ] {
            let mut vars = good();
            vars.remove(var);
            let err = parse(&vars).unwrap_err();
            assert!(
                matches!(err, Error::EnvMissing { var: v } if v == var),
                "{var}: {err}"
            );
            assert!(
                err.to_string().contains(&format!("{var} is not set")),
                "{err}"
            );
        }
    }

    #[test]
    fn non_integers_are_rejected_with_the_variable_name() {
        for var in [RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE] {
            for bad in ["", "x", "-1", "1.5", "0x3"] {
                let msg = error_with(var, bad);
                assert!(msg.contains(&format!("{var}={bad:?}")), "{msg}");
                assert!(msg.contains("expected a non-negative integer"), "{msg}");
            }
        }
    }

    #[test]
    fn rank_must_be_below_world_size() {
        let mut vars = good();
        vars.insert(RANK, "8".into());
        vars.insert(LOCAL_RANK, "0".into());
        let msg = parse(&vars).unwrap_err().to_string();
        assert!(
            msg.contains("RANK=\"8\": must be less than WORLD_SIZE=8"),
            "{msg}"
        );
    }

    #[test]
    fn local_rank_must_be_below_local_world_size() {
        let msg = error_with(LOCAL_RANK, "4");
        assert!(
            msg.contains("LOCAL_RANK=\"4\": must be less than LOCAL_WORLD_SIZE=4"),
            "{msg}"
        );
    }

    #[test]
    fn sizes_must_be_positive() {
        let msg = error_with(WORLD_SIZE, "0");
        assert!(
            msg.contains("WORLD_SIZE=\"0\": must be at least 1"),
            "{msg}"
        );
        let msg = error_with(LOCAL_WORLD_SIZE, "0");
        assert!(
            msg.contains("LOCAL_WORLD_SIZE=\"0\": must be at least 1"),
            "{msg}"
        );
    }

    #[test]
    fn world_size_must_be_a_multiple_of_local_world_size() {
        let mut vars = good();
        vars.insert(LOCAL_WORLD_SIZE, "3".into());
        vars.insert(LOCAL_RANK, "2".into());
        let msg = parse(&vars).unwrap_err().to_string();
        assert!(
            msg.contains("WORLD_SIZE=\"8\": must be a multiple of LOCAL_WORLD_SIZE=3"),
            "{msg}"
        );
    }

    #[test]
    fn ranks_must_be_numbered_node_by_node() {
        // Rank 5 with 4 ranks per node is local rank 1; a cyclic layout would give 2.
        let msg = error_with(LOCAL_RANK, "2");
        assert!(
            msg.contains("LOCAL_RANK=\"2\": must equal RANK % LOCAL_WORLD_SIZE = 5 % 4 = 1"),
            "{msg}"
        );
    }

    #[test]
    fn master_port_must_be_a_valid_port() {
        for bad in ["0", "65536", "99999999999", "http", ""] {
            let msg = error_with(MASTER_PORT, bad);
            assert!(
                msg.contains(&format!(
                    "MASTER_PORT={bad:?}: expected a TCP port in 1..=65535"
                )),
                "{msg}"
            );
        }
        let mut vars = good();
        vars.insert(MASTER_PORT, "65535".into());
        assert_eq!(parse(&vars).unwrap().master_port, 65535);
    }

    #[test]
    fn master_addr_must_not_be_empty() {
        let msg = error_with(MASTER_ADDR, "  ");
        assert!(msg.contains("MASTER_ADDR=\"\": must not be empty"), "{msg}");
    }

    #[test]
    fn validate_checks_hand_built_layouts() {
        let mut env = parse(&good()).unwrap();
        env.master_port = 0;
        let msg = env.validate().unwrap_err().to_string();
        assert!(
            msg.contains("MASTER_PORT=\"0\": expected a TCP port"),
            "{msg}"
        );
    }

    #[test]
    fn loopback_port_pairs_are_free_distinct_and_below_the_ephemeral_range() {
        let ports: Vec<u16> = (0..8).map(|_| loopback_port_pair().unwrap()).collect();
        for &p in &ports {
            assert!((LOOPBACK_PORT_FIRST..LOOPBACK_PORT_FIRST + LOOPBACK_PORTS).contains(&p), "{p}");
            assert!(p % 2 == 0 && p + 1 < 29500, "{p}");
            // Both free now (nothing here holds them).
            let _a = std::net::TcpListener::bind(("127.0.0.1", p)).unwrap();
            let _b = std::net::TcpListener::bind(("127.0.0.1", p + 1)).unwrap();
        }
        let mut sorted = ports.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), ports.len(), "{ports:?}");
    }
}
