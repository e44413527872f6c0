//! [`Rma`]: one process's handle on the job's global memory.
//!
//! Start-up (collective over the world, in order). Every world collective is a round
//! across every host, which costs far more than what it carries (0.2–1.7 s at 16
//! ranks on two namespace hosts of a loaded 2-core VM), so start-up makes one, the
//! introductions, and a second only for native RMA where some proc would use it:
//! 1. Read settings. Create this proc's control segment, named with its own job token
//!    (the wire-up's job id, else a random one), and bind the service's listener
//!    (the configured address, else the host's first non-loopback IPv4 one, else
//!    loopback). Allgather every proc's introduction: host identity, pid, affinity
//!    mask (the domain's procs' masks together say how many CPUs they share, for the
//!    waiting policy of locks and node collectives), job token and connection cookie
//!    (rank 0's are the job's), the listener's address, and whether it would open
//!    native RMA. The allgather also says that every control segment exists.
//! 2. Group procs into domains (same host identity, unless `NF_RMA_DIRECT=0`).
//! 3. The lowest proc of each domain reclaims segment files of dead jobs, and their
//!    memory-registry entries (`nf-memreg`).
//! 4. Start the service thread on the listener if some proc is outside our domain
//!    (else close it).
//! 5. Map the control segments of our domain's procs; the last of a segment's domain
//!    peers to map it unlinks its name (rule 1 of `shm/control.rs`), so no step waits
//!    for that, and a SIGKILLed job leaves no control segment behind.
//! 6. Native RMA over ofi where every end can (`native/setup.rs`: its own allgather
//!    of endpoint addresses, only when some proc said it would open one, and a
//!    progress thread when used).
//! 7. Publish this proc, with no segments yet, in the memory registry (`nf-memreg`).
//!
//! Shutdown ([`Rma::finalize`], collective): complete and fence everything, barrier,
//! then stop the service thread. Dropping an `Rma` without it stops the thread at
//! once, which procs still sending to us see as a lost connection.
//!
//! The public operations live in `api/`, one file per family.

use std::cell::RefCell;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use nf_core::wait::Waiter;

use crate::api::coll::CollState;
use crate::config::RmaConfig;
use crate::domain::Domains;
use crate::error::RmaError;
use crate::memory::{Memory, Names};
use crate::origin::Origin;
use crate::service::wire::Hello;
use crate::service::{Service, Shared};
use crate::shm::control::{self, Control};
use crate::shm::lock::Patience;
use crate::shm::map::Mapping;
use crate::shm::sync::Ordering;
use crate::table::Seg;
use crate::wireup::{Team, Wireup};
use nf_memreg::Publisher;
use nf_sys::cpus::CPU_WORDS;
use nf_sys::hash::fnv1a;

/// Files of a dead job older than this are reclaimed (step 3).
const STALE_AFTER: Duration = Duration::from_secs(60);

/// One process's handle on the job's global memory (one per process).
///
/// It is used from one thread (like `nf_core::World`); a service thread it owns
/// answers other procs' requests on its memory without this thread's help.
pub struct Rma<'w> {
    // Field order is drop order: the registry entry goes first, so the node stops
    // showing our segments before anything is unmapped; the service thread stops
    // before memory is unmapped.
    pub(crate) registry: RefCell<Publisher>,
    /// Held for its `Drop`, which stops the thread.
    _service: Option<Service>,
    pub(crate) origin: RefCell<Origin>,
    pub(crate) mem: RefCell<Memory>,
    pub(crate) shared: Arc<Shared>,
    /// Control segments of our domain's procs (`None` for the others).
    pub(crate) ctl: Vec<Option<Arc<Control>>>,
    /// Mutexes each proc hosts.
    pub(crate) mutexes: RefCell<Vec<usize>>,
    pub(crate) wire: Box<dyn Wireup + 'w>,
    pub(crate) cfg: RmaConfig,
    pub(crate) rank: usize,
    pub(crate) size: usize,
    pub(crate) domains: Domains,
    /// Procs grouped by host (the domains, unless `NF_RMA_DIRECT=0`): whose segments
    /// share this host's memory.
    pub(crate) hosts: Domains,
    pub(crate) pid: u32,
    pub(crate) names: Names,
    pub(crate) patience: Patience,
    /// Where this proc is in its node's collectives (`api/coll.rs`).
    pub(crate) coll: CollState,
}

/// What each proc tells the others in step 1.
struct Intro {
    pid: u32,
    cookie: u64,
    /// Its job token: names its control segment; rank 0's is the job's.
    job: String,
    /// Its affinity mask (`nf_sys::cpus::affinity_mask`; all ones when unknown).
    cpus: Vec<u64>,
    /// It would open native RMA (`native::worth_opening`).
    native: bool,
    /// Its service listener's address.
    service: String,
    host: String,
}

impl Intro {
    fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&self.pid.to_le_bytes());
        b.extend_from_slice(&self.cookie.to_le_bytes());
        for text in [&self.job, &self.service] {
            b.extend_from_slice(&(text.len() as u32).to_le_bytes());
            b.extend_from_slice(text.as_bytes());
        }
        b.push(u8::from(self.native));
        for w in &self.cpus {
            b.extend_from_slice(&w.to_le_bytes());
        }
        b.extend_from_slice(self.host.as_bytes());
        b
    }

    fn decode(b: &[u8]) -> Option<Intro> {
        let pid = u32::from_le_bytes(b.get(0..4)?.try_into().ok()?);
        let cookie = u64::from_le_bytes(b.get(4..12)?.try_into().ok()?);
        let mut at = 12;
        let mut text = || {
            let n = u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?) as usize;
            let t = String::from_utf8(b.get(at + 4..at + 4 + n)?.to_vec()).ok()?;
            at += 4 + n;
            Some(t)
        };
        let (job, service) = (text()?, text()?);
        let native = *b.get(at)? != 0;
        let mask_at = at + 1;
        let host_at = mask_at + 8 * CPU_WORDS;
        let cpus = b
            .get(mask_at..host_at)?
            .chunks_exact(8)
            .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
            .collect();
        let host = String::from_utf8(b.get(host_at..)?.to_vec()).ok()?;
        Some(Intro {
            pid,
            cookie,
            job,
            cpus,
            native,
            service,
            host,
        })
    }
}

/// The CPUs the procs of a domain (`mine`) may use together, unless `NF_JOB_CPUS`
/// says: the union of their affinity masks, so ranks pinned one per core count as
/// having a CPU each (each alone sees one).
fn domain_cpus(cfg: &RmaConfig, intros: &[Intro], mine: &[usize]) -> usize {
    cfg.job_cpus.unwrap_or_else(|| {
        let mut together = vec![0u64; CPU_WORDS];
        for &p in mine {
            for (t, w) in together.iter_mut().zip(&intros[p].cpus) {
                *t |= w;
            }
        }
        nf_sys::cpus::usable_by(&together)
    })
}

/// A fresh random number (the std hasher's per-process random keys).
fn random_u64() -> u64 {
    let mut h = RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}

impl<'w> Rma<'w> {
    /// Joins the job's global memory with settings from the environment (collective
    /// over the world).
    pub fn new(wire: impl Wireup + 'w) -> Result<Rma<'w>, RmaError> {
        Self::with_config(wire, RmaConfig::from_env()?)
    }

    /// Joins with explicit settings (collective over the world).
    pub fn with_config(wire: impl Wireup + 'w, cfg: RmaConfig) -> Result<Rma<'w>, RmaError> {
        let wire: Box<dyn Wireup + 'w> = Box::new(wire);
        let rank = wire.rank();
        let size = wire.members().len();
        if rank >= size || wire.members().iter().enumerate().any(|(i, &m)| i != m) {
            return Err(RmaError::Collective {
                op: "Rma::new",
                why: format!(
                    "the wire-up's world must be ranks 0..{size} in order, with our rank {rank} \
                     in it"
                ),
            });
        }
        if cfg.chunk == 0 || cfg.chunk as u64 > crate::service::wire::MAX_DATA {
            return Err(RmaError::Config {
                var: "NF_RMA_CHUNK",
                value: cfg.chunk.to_string(),
                expected: "1 ..= 67108864 bytes",
            });
        }
        let pid = std::process::id();

        // Step 1.
        let host = wire.host_identity();
        let host_hash = fnv1a(host.as_bytes());
        let token = wire
            .job_id()
            .unwrap_or_else(|| format!("rma{:x}", random_u64() as u32));
        let own_name = Names::new(cfg.shm_dir.clone(), &token, host_hash).control(rank);
        let own_ctl = Control::new(Mapping::create(&own_name, control::SIZE)?);
        own_ctl.init(pid);
        let own_ctl = Arc::new(own_ctl);
        let bind = bind_address(&cfg);
        let listener = Service::listen(bind)?;
        let service_addr = listener.local_addr().map_err(|source| RmaError::Io {
            what: "reading the address of the service listener".into(),
            source,
        })?;
        let me = Intro {
            pid,
            cookie: random_u64(),
            job: token,
            cpus: nf_sys::cpus::affinity_mask().unwrap_or_else(|| vec![u64::MAX; CPU_WORDS]),
            native: crate::native::worth_opening(cfg.ofi, &cfg.ofi_provider),
            service: service_addr.to_string(),
            host,
        };
        let intros = gather(&*wire, &me.encode(), "start-up introduction", Intro::decode)?;
        let (cookie, job) = (intros[0].cookie, intros[0].job.clone());

        // Step 2.
        let keys: Vec<String> = intros
            .iter()
            .enumerate()
            .map(|(p, i)| {
                if cfg.direct {
                    i.host.clone()
                } else {
                    format!("proc {p}")
                }
            })
            .collect();
        let domains = Domains::from_keys(&keys, rank);
        let host_keys: Vec<&str> = intros.iter().map(|i| i.host.as_str()).collect();
        let hosts = Domains::from_keys(&host_keys, rank);
        let mine = domains.procs(domains.my_id()).to_vec();
        let pids: Vec<u32> = (0..size)
            .map(|p| if mine.contains(&p) { intros[p].pid } else { 0 })
            .collect();
        let cpus = domain_cpus(&cfg, &intros, &mine);
        let patience = Patience::new(
            Waiter::new(cfg.wait, mine.len(), Some(cpus), None),
            cfg.peer_check,
            Arc::new(pids),
        );
        let names = Names::new(cfg.shm_dir.clone(), &job, host_hash);

        // Step 3.
        if mine[0] == rank {
            nf_transport::shm::segment::reclaim_stale(names.dir(), STALE_AFTER);
            if let Some(dir) = &cfg.mem_registry {
                nf_memreg::reclaim_stale(dir);
            }
        }

        // Step 4.
        let dead_after = cfg.dead_after.unwrap_or(crate::service::DEAD_AFTER);
        let shared = Arc::new(Shared {
            hello: Hello {
                cookie,
                rank: rank as u32,
                size: size as u32,
            },
            own: RwLock::new(Vec::new()),
            ctl: Arc::clone(&own_ctl),
            patience: patience.clone(),
            pid,
            stop: AtomicBool::new(false),
            dead_after,
        });
        let service = if mine.len() < size {
            Some(Service::start(listener, Arc::clone(&shared))?)
        } else {
            drop(listener);
            None
        };
        let addrs = intros
            .iter()
            .enumerate()
            .map(|(p, i)| {
                if mine.contains(&p) {
                    return Ok(None);
                }
                i.service
                    .parse::<SocketAddr>()
                    .map(Some)
                    .map_err(|_| RmaError::Protocol {
                        proc: p,
                        why: format!(
                            "published service address {:?} is not an address",
                            i.service
                        ),
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;

        // Step 5.
        if mine.len() == 1 {
            own_ctl.mapping().unlink()?;
        }
        let mut ctl: Vec<Option<Arc<Control>>> = (0..size).map(|_| None).collect();
        for &p in &mine {
            ctl[p] = Some(if p == rank {
                Arc::clone(&own_ctl)
            } else {
                let name = Names::new(cfg.shm_dir.clone(), &intros[p].job, host_hash).control(p);
                let c = Control::new(Mapping::open(&name, control::SIZE)?);
                c.check()
                    .map_err(|why| RmaError::Protocol { proc: p, why })?;
                if c.header().mapped.fetch_add(1, Ordering::AcqRel) as usize + 2 == mine.len() {
                    c.mapping().unlink()?;
                }
                Arc::new(c)
            });
        }

        // Step 6.
        let wanted: Vec<bool> = intros.iter().map(|i| i.native).collect();
        let native = crate::native::setup(&cfg, &*wire, &domains, &wanted, bind, cookie)?;

        let spin = Waiter::new(cfg.wait, mine.len(), cfg.job_cpus, None).spins();
        let origin = Origin::new(
            shared.hello,
            addrs,
            cfg.chunk,
            cfg.peer_check,
            dead_after,
            spin,
            native,
        );
        // Step 7.
        let registry = Publisher::start(cfg.mem_registry.as_deref(), &job, rank);
        Ok(Rma {
            registry: RefCell::new(registry),
            _service: service,
            origin: RefCell::new(origin),
            mem: RefCell::new(Memory::new(size)),
            shared,
            ctl,
            mutexes: RefCell::new(vec![0; size]),
            wire,
            cfg,
            rank,
            size,
            domains,
            hosts,
            pid,
            names,
            patience,
            coll: CollState::default(),
        })
    }

    /// This process's proc number (its world rank).
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Number of procs in the job.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The world's wire-up.
    pub fn wireup(&self) -> &dyn Wireup {
        &*self.wire
    }

    /// Where the node's `/mem` shows our segment at `base` (as [`Rma::malloc`]
    /// returned it), if it is published there (`NF_MEM_REGISTRY`). Returns once the
    /// registry's file lists it (its writer runs behind allocations), so the name can
    /// be handed to others at once.
    pub fn mem_file(&self, base: u64) -> Option<nf_memreg::MemFile> {
        let registry = self.registry.borrow();
        registry.flush();
        registry.published(base)
    }

    /// The settings in force.
    pub fn config(&self) -> &RmaConfig {
        &self.cfg
    }

    /// Completes everything, waits for every proc, and stops the service thread
    /// (collective over the world; ARMCI_Finalize).
    pub fn finalize(self) -> Result<(), RmaError> {
        self.wait_all()?;
        self.barrier()?;
        Ok(())
    }

    /// Checks that `proc` is in the job.
    pub(crate) fn check_proc(&self, op: &'static str, proc: usize) -> Result<(), RmaError> {
        if proc >= self.size {
            return Err(RmaError::NoSuchProc {
                op,
                proc,
                size: self.size,
            });
        }
        Ok(())
    }

    /// The live segment of `proc` holding `addr .. addr + len`, or the error naming
    /// the call (the argument is `remote`).
    pub(crate) fn segment_of(
        &self,
        op: &'static str,
        proc: usize,
        addr: u64,
        len: u64,
    ) -> Result<Seg, RmaError> {
        self.mem
            .borrow()
            .table
            .find(proc, addr, len)
            .ok_or_else(|| RmaError::OutOfSegment {
                op,
                arg: "remote".into(),
                proc,
                addr,
                len,
            })
    }

    /// The control segment of `proc`, which shares our domain.
    pub(crate) fn ctl_of(&self, proc: usize) -> &Control {
        self.ctl[proc]
            .as_deref()
            .expect("same-domain procs have their control segment mapped")
    }
}

/// Where the service listens: `NF_RMA_BIND`, else `NF_TCP_BIND`, else the first
/// non-loopback IPv4 address that is up, else loopback. Chosen before the
/// introductions (step 1), so before anyone knows whether the job spans hosts; a job on
/// one host closes the listener after them unless `NF_RMA_DIRECT=0` sends its procs
/// through the service (and its connections are refused without the job's cookie).
fn bind_address(cfg: &RmaConfig) -> IpAddr {
    let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
    cfg.bind.unwrap_or_else(|| {
        if_addrs::get_if_addrs()
            .ok()
            .and_then(|l| {
                l.into_iter()
                    .map(|i| i.ip())
                    .find(|ip| ip.is_ipv4() && !ip.is_loopback())
            })
            .unwrap_or(loopback)
    })
}

/// Every member's word of an allgather over `team`, decoded; a malformed word is a
/// protocol error naming its member (`what` says which message it was).
pub(crate) fn gather<T>(
    team: &dyn Team,
    mine: &[u8],
    what: &str,
    decode: impl Fn(&[u8]) -> Option<T>,
) -> Result<Vec<T>, RmaError> {
    decode_all(team, team.allgather(mine)?, what, decode)
}

/// [`gather`] of a value every member encodes in the same number of bytes (one step
/// fewer on teams that exchange lengths first).
pub(crate) fn gather_fixed<T>(
    team: &dyn Team,
    mine: &[u8],
    what: &str,
    decode: impl Fn(&[u8]) -> Option<T>,
) -> Result<Vec<T>, RmaError> {
    decode_all(team, team.allgather_fixed(mine)?, what, decode)
}

fn decode_all<T>(
    team: &dyn Team,
    all: Vec<Vec<u8>>,
    what: &str,
    decode: impl Fn(&[u8]) -> Option<T>,
) -> Result<Vec<T>, RmaError> {
    let members = team.members();
    all.iter()
        .enumerate()
        .map(|(i, b)| {
            decode(b).ok_or_else(|| RmaError::Protocol {
                proc: members[i],
                why: format!("malformed {what}"),
            })
        })
        .collect()
}

/// Decodes one little-endian `u64` word of a [`gather`].
pub(crate) fn word_u64(b: &[u8]) -> Option<u64> {
    b.try_into().ok().map(u64::from_le_bytes)
}
